"""--memory: bytes per idle connection. Per server, this process opens N keep-alive connections that
each complete one request and stay idle; the server's heap (jcmd GC.class_histogram, JVMs) and RSS
are read before and after, recorded in memory.jsonl and printed as a progress line."""

import subprocess
import time

from kiln_sweep import idle, measure, note, pinning, records, report
from kiln_sweep.plan import step_label
from kiln_sweep.servers import BIND


class Memory:
    """Measures each server holding idle connections. Reads the plan (preflight.Plan), starts and stops
    the servers through `servers` (servers.Servers), writes under the results directory `out`."""

    def __init__(self, plan, servers, out):
        self.plan, self.servers, self.out = plan, servers, out

    def measure(self, rnd, server):
        """One server's round: start it (it has answered one GET path: classes loaded, pools made), hold
        each step's connections, stop it."""
        r = self.servers.start(server, rnd)
        if r is None:
            return
        java = self.plan.javas.get(server.name)
        jcmd = pinning.tool(java.path, "jcmd") if java else None
        for step in self.plan.steps:
            run = self._step(rnd, r, step, jcmd)
            records.append(self.out, records.MEMORY, run)
            self._progress(run)
            if not measure.alive(r.proc.pid):
                message = f"{server.name} died holding c={step.label} idle connections (log: {r.log})"
                note(message)
                records.append(self.out, records.PROBLEMS, records.Problem(rnd, server.name, message))
                break
        self.servers.stop()

    def _step(self, rnd, r, step, jcmd):
        """One server holding step.concurrency idle connections, against the baseline taken just before."""
        n, name = step.concurrency, r.server.name
        rel = f"raw/r{rnd}-{name}-c{n}"
        self.servers.wait_idle()
        run = records.MemoryRun(round=rnd, server=name, requested=step.requested, connections=n,
                                cap_reason=step.cap_reason, opened=0, established=0, still_open=0, open_s=0.0,
                                errors="", rss_before_kb=0, rss_after_kb=0)
        conns = idle.IdleConnections(BIND, r.port, self.plan.opts.path)
        try:
            if jcmd:
                idle.class_histogram(jcmd, r.proc.pid, self.out / f"{rel}-histogram-before.txt")
                run.histogram_before = f"{rel}-histogram-before.txt"
            run.rss_before_kb = measure.status_kb("VmRSS", r.pids)
            start = time.monotonic()
            run.opened = conns.open(n, time_limit_s=60 + n // 200)
            run.open_s, run.errors = round(time.monotonic() - start, 2), conns.error_text()
            # Every connection has had its answer; wait until the server's side shows them all in ss.
            deadline = time.monotonic() + 30
            while idle.established(r.port) < run.opened and time.monotonic() < deadline:
                time.sleep(0.2)
            self.servers.wait_idle()
            if jcmd:
                idle.class_histogram(jcmd, r.proc.pid, self.out / f"{rel}-histogram-after.txt")
                run.histogram_after = f"{rel}-histogram-after.txt"
            run.rss_after_kb = measure.status_kb("VmRSS", r.pids)
            run.established = idle.established(r.port)
            run.still_open = conns.still_open()
        except (ValueError, OSError, subprocess.TimeoutExpired) as e:
            run.error = str(e)
        finally:
            conns.close()
        if not run.error and run.opened == 0:
            run.error = f"no connection completed its request ({run.errors or 'no error reported'})"
        return run

    def _progress(self, run):
        row = report.memory_row(self.out, run)
        print(f"[round {run.round}/{self.plan.rounds}] {run.server:<17} "
              f"c={step_label(run.requested, run.connections, run.cap_reason)}"
              f"  opened {run.opened}, still open {run.still_open}, server established {run.established}"
              f"  heap {report.fmt(row['heap_bytes_per_conn'])} B/conn  RSS {report.fmt(row['rss_bytes_per_conn'])} B/conn"
              + (f"  ({run.errors})" if run.errors else "") + (f"  error: {run.error}" if run.error else ""),
              flush=True)
