"""The load on one server: per step a warm-up and a timed run of the client (ab or wrk) on its own CPU,
with what the server used meanwhile, recorded in runs.jsonl and printed as a progress line; then the
server's CPU in the window after its last step."""

import subprocess
import time
from pathlib import Path

from kiln_sweep import clients, measure, nmt, note, perf, pinning, records
from kiln_sweep.plan import timed_load, warmup_requests, wrk_duration
from kiln_sweep.servers import BIND


class Load:
    """Measures each server under load, step by step. Reads the plan (preflight.Plan), starts and stops
    the servers through `servers` (servers.Servers), writes under the results directory `out`."""

    def __init__(self, plan, servers, out):
        self.plan, self.servers, self.out = plan, servers, out

    def measure(self, rnd, server):
        """One server's round: start it, run every step until it dies, watch it, stop it."""
        r = self.servers.start(server, rnd)
        if r is None:
            return
        for index, step in enumerate(self.plan.steps, 1):
            if not self._step(rnd, index, step):
                break
        if r.proc.poll() is None:
            self._after_sweep(rnd)
        self.servers.stop()

    def _step(self, rnd, index, step):
        """One warm-up and one timed run at `step`; False when the server died during it."""
        r, c, o, duration = self.servers.running, step.concurrency, self.plan.opts, self.plan.duration
        rel = f"raw/r{rnd}-{r.server.name}-c{c}"
        base = self.out / rel
        self.servers.wait_idle()
        if r.group is not None:
            r.group.reset_peak()
            kills0 = r.group.read().oom_kills
        self._run_client(c, warmup_requests(c, duration), duration, f"{base}-warmup.txt")
        warm = clients.parse_output(f"{base}-warmup.txt", o.client)
        n, limit = timed_load(c, warm and warm.rps, duration)
        if o.client == "wrk":
            limit = wrk_duration(n, warm and warm.rps, duration)
        idle_wait, idle = self.servers.wait_idle()

        trace = self._perf_start(r, base, rel) if o.perf else None
        try:
            ticks0, cpu0, start = measure.cpu_ticks(r.pids), measure.children_cpu_ms(), time.monotonic()
            rc = self._run_client(c, n, limit, f"{base}.txt", f"{base}.csv")
            wall, cpu1, ticks1 = time.monotonic() - start, measure.children_cpu_ms(), measure.cpu_ticks(r.pids)
        finally:
            if trace is not None:
                trace.stop()
        result = clients.parse_output(f"{base}.txt", o.client)
        run = records.TimedRun(
            round=rnd, server=r.server.name, step=index, requested=step.requested, concurrency=c,
            cap_reason=step.cap_reason, raw=f"{rel}.txt", warmup_raw=f"{rel}-warmup.txt", client_rc=rc,
            requests_limit=n, time_limit_s=limit, wall_s=round(wall, 3), server_cpu_ticks=ticks1 - ticks0,
            client_user_ms=cpu1[0] - cpu0[0], client_sys_ms=cpu1[1] - cpu0[1],
            rss_hwm_kb=measure.status_kb("VmHWM", r.pids), rss_kb=measure.status_kb("VmRSS", r.pids),
            idle_wait_s=idle_wait, idle_reached=idle, server_alive=measure.alive(r.proc.pid))
        if r.group is not None:
            g = r.group.read()
            run.cgroup, run.cgroup_peak_bytes, run.cgroup_failcnt = r.group.name, g.peak_bytes, g.failcnt
            run.cgroup_oom_kills = None if g.oom_kills is None or kills0 is None else g.oom_kills - kills0
        java = self.plan.javas.get(r.server.name)
        if trace is not None:
            for key, value in trace.results(java and java.path, result and result.complete).items():
                setattr(run, key, value)
        if o.nmt and java is not None:
            self._native_memory(run, r, java, f"{rel}-nmt.txt")
        if r.recorder is not None:
            self._pinned_events(run, r, f"{rel}-pinned.jfr")
        records.append(self.out, records.RUNS, run)
        self._progress(run, result, step.label)
        if not run.server_alive:
            message = f"{r.server.name} died during c={step.label} (log: {r.log})"
            note(message)
            records.append(self.out, records.PROBLEMS, records.Problem(rnd, r.server.name, message))
        return run.server_alive

    def _run_client(self, concurrency, requests, time_limit_s, out, csv_file=None):
        """Runs the client on its CPU; returns its exit status. `timeout` bounds it even if it ignores
        its own limit; whatever ends the sweep meanwhile (SIGTERM, Ctrl-C) ends the client too."""
        r = self.servers.running
        url = f"http://{BIND}:{r.port}{self.plan.opts.path}"
        cmd = self.plan.on_client_cpu(clients.command(self.plan.opts.client, concurrency, requests, time_limit_s,
                                                      url, csv_file, self.plan.wrk_threads))
        cmd = ["timeout", "-k", "5", str(time_limit_s + 60), *cmd]
        if r.group is not None:
            cmd = r.group.wrap(cmd)
        records.log_command(self.out, cmd)
        err = Path(f"{out}.err")
        with open(out, "w") as o, open(err, "w") as e:
            client = subprocess.Popen(cmd, stdout=o, stderr=e, stdin=subprocess.DEVNULL)
            try:
                rc = client.wait()
            finally:
                if client.returncode is None:
                    client.terminate()
                    client.wait()
        if err.stat().st_size == 0:
            err.unlink()
        return rc

    def _perf_start(self, r, base, rel):
        """--perf: perf attached to the server's processes, counting and sampling (perf.Step); its error,
        if it could not start, goes into the run's record."""
        trace = perf.Step(self.plan.perf_events, r.pids, base, rel, self.plan.on_client_cpu)
        for cmd in trace.commands:
            records.log_command(self.out, cmd)
        trace.start()
        return trace

    def _native_memory(self, run, r, java, rel_nmt):
        """--nmt: the JVM's Native Memory Tracking summary after the timed run, into the run's record."""
        if not measure.alive(r.proc.pid):
            run.nmt_error = "the server was gone: no NMT summary"
            return
        summary, run.nmt_error = nmt.read(java.path, r.proc.pid, self.out / rel_nmt)
        run.nmt_raw = rel_nmt
        if summary:
            run.nmt_reserved_kb, run.nmt_committed_kb = summary["reserved_kb"], summary["committed_kb"]
            run.nmt_committed_kb_by_category = summary["categories"]

    def _pinned_events(self, run, r, rel_jfr):
        """The JFR pinning events new since the previous step, into the run's record."""
        if not measure.alive(r.proc.pid):
            run.pinned_error = "the server was gone: no JFR dump"
            return
        events, error = r.recorder.new_events(self.out / rel_jfr)
        run.pinned_jfr, run.pinned_error = rel_jfr, error
        if not error:
            summary = pinning.summarize(events)
            run.pinned_events, run.pinned_max_ms, run.pinned_top = summary["events"], summary["max_ms"], summary["top"]

    def _progress(self, run, result, label):
        us = f"{run.server_cpu_ticks / measure.CLK_TCK * 1e6 / result.complete:.1f}" \
            if result and result.complete else "-"
        client_pct = (run.client_user_ms + run.client_sys_ms) / 10 / run.wall_s if run.wall_s else 0
        print(f"[round {run.round}/{self.plan.rounds}] {run.server:<17} c={label:<7} "
              f"{f'{result.rps:.0f}' if result else '-':>9} req/s  failed {result.failures if result else '-'}  "
              f"p99 {f'{result.p99_ms:.2f}' if result and result.p99_ms is not None else '-'} ms  {us} us/req CPU  "
              f"RSS {run.rss_hwm_kb / 1024:.0f} MB  client CPU {client_pct:.0f}%"
              + (f"  cgroup peak {run.cgroup_peak_bytes / 1048576:.0f} MB" if run.cgroup_peak_bytes is not None else "")
              + (f"  OOM kills {run.cgroup_oom_kills}" if run.cgroup_oom_kills else "")
              + (f"  pinned {run.pinned_events}" if run.pinned_events is not None else "")
              + (f"  ({run.pinned_error})" if run.pinned_error else "")
              + perf.text(run.syscalls_per_request) + (f"  (perf: {run.perf_error})" if run.perf_error else "")
              + nmt.text(run.nmt_committed_kb) + (f"  (NMT: {run.nmt_error})" if run.nmt_error else "")
              + (f"  (client exit {run.client_rc})" if run.client_rc else "")
              + ("" if run.idle_reached else "  (server not idle before the step)"), flush=True)

    def _after_sweep(self, rnd):
        """The server's CPU in each second of the window after its last step."""
        r, window = self.servers.running, self.plan.timing.after_s
        pcts = []
        for _ in range(window):
            t0 = measure.cpu_ticks(r.pids)
            time.sleep(1)
            pcts.append((measure.cpu_ticks(r.pids) - t0) * 100 // measure.CLK_TCK)
        records.append(self.out, records.AFTER, records.AfterWindow(rnd, r.server.name, window, pcts))
        print(f"[round {rnd}/{self.plan.rounds}] {r.server.name}: CPU in the {window} s after the sweep "
              f"(% per second): {' '.join(map(str, pcts))}", flush=True)
