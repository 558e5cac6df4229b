"""--subscribers: the fan-out benchmark. Per server and per subscriber count N, a fresh server holds N
server-sent-event subscribers (GET /updates/events) while a publisher commits at a fixed rate (GET
/updates?queries=1), and what each commit costs to fan out is measured:

1. start the server (servers.Servers, as the sweep does) and wait for /healthz;
2. connect N subscribers, spread over K client processes (N/K each, loopback only), bounded by a connect
   timeout: sweep/FanoutClient.java (Java on NIO, one selector thread; compiled with javac by the sweep, as
   the dummy anchor is) by default, or kiln_sweep.subscribers (asyncio + aiohttp on the venv's python) with
   --fanout-client python; both speak the same stdin/stdout protocol and write the same result file;
3. idle phase, no commits: the server's heap (jcmd GC.class_histogram: live objects after a full GC) and
   RSS before the subscribers connected and with all of them held, per subscriber (as --memory does for
   idle keep-alive connections);
4. warm-up: WARMUP_S seconds of commits at the same rate, delivered and then dropped from the counts (a
   fresh server's first events wait for class loading and the JIT);
5. publish phase: this process commits at --rate per second for --duration seconds over one keep-alive
   connection, then waits (bounded) until every event reached every subscriber or nothing moves any more;
   measured over publish and drain: deliveries per second, latency from commit (the event's committedAt)
   to the moment a client read it (histogram over all deliveries: p50, p99, max), events lost (gaps in a
   stream's ids; and deliveries expected = commits x subscribers held, against received), streams the
   server ended, `event: reload`s, the server's CPU (utime + stime, /proc/PID/stat) per delivery, and the
   client processes' CPU over the same window, alone and as a share of the server's;
6. stop the clients, then the server; next N (a fresh server: each N starts from the same baseline).

The publisher runs in this process (10 requests a second cost next to nothing), outside the --vps cgroup;
the subscriber processes run inside it, sharing its one CPU with the server. Records go to fanout.jsonl,
each step's merged latency histogram and the clients' results to raw/."""

import http.client
import json
import os
import queue
import re
import subprocess
import threading
import time
from pathlib import Path

from kiln_sweep import SWEEP_DIR, idle, measure, note, pinning, records, report
from kiln_sweep.servers import BIND, http_status

SSE_PATH = "/updates/events"
PUBLISH_PATH = "/updates?queries=1"
HEALTH_S = 30
# Connects under way at once, over all client processes: below every front end's listen backlog
# (Kilim's 1000), as for --memory.
IN_FLIGHT = idle.IN_FLIGHT
# After the last commit: wait until every expected event arrived, at most this long, and stop early when
# no client received anything for QUIET_S.
DRAIN_MAX_S = 30
QUIET_S = 5
# Before the measured publish phase, this many seconds of commits at the same rate whose events are not
# counted: the first events of a fresh server are slow (class loading, JIT), the steady state is measured.
WARMUP_S = 3
# The publisher's connections: commits stay on their schedule while up to this many wait for their answers.
PUBLISHERS = 16
# A server log line worth reporting (errors, refused subscribers, full queues).
LOG_PROBLEM = re.compile(r"error|exception|too many|503|refus|overflow|reload|dropp", re.IGNORECASE)


JAVA_CLIENT_SOURCE = SWEEP_DIR / "FanoutClient.java"
# The Java client's JVM: a small heap that grows as it needs (its histogram is 2.4 MB, a subscriber a few
# hundred bytes: 20,000 take ~20 MB), the serial collector (no GC threads beside the one selector thread;
# under --vps it shares one CPU with the server) and a small code cache: under --vps its memory counts
# against the server's 1 GiB.
JAVA_CLIENT_FLAGS = ["-Xms16m", "-Xmx128m", "-XX:+UseSerialGC", "-XX:ReservedCodeCacheSize=32m",
                     "-XX:MaxMetaspaceSize=32m", "-Xss512k"]


class JavaClient:
    """sweep/FanoutClient.java, compiled with `java`'s javac into `classes`, run on `java` (servers.Java)."""
    name = "java"

    def __init__(self, java, classes):
        self.java, self.classes = java, Path(classes)
        self.env = None
        self.version = f"sweep/FanoutClient.java (NIO, one selector thread) on {java.version_line}"

    @classmethod
    def compile(cls, java, classes):
        """Compiles the client into `classes` (once per sweep, as the dummy anchor is); SweepError if it fails."""
        java.compile(JAVA_CLIENT_SOURCE, classes)
        return cls(java, classes)

    def command(self, args):
        return [self.java.path, *JAVA_CLIENT_FLAGS, "-cp", str(self.classes), "FanoutClient", *args]


class PythonClient:
    """kiln_sweep.subscribers on the venv's `python` (asyncio + aiohttp): --fanout-client python."""
    name = "python"

    def __init__(self, python, version=""):
        self.python = python
        self.env = dict(os.environ, PYTHONPATH=str(SWEEP_DIR))
        self.version = version or "kiln_sweep.subscribers (asyncio + aiohttp)"

    def command(self, args):
        return [str(self.python), "-m", "kiln_sweep.subscribers", *args]


def connect_timeout_s(n):
    """Seconds for N subscribers to get their streams: 30 s and 1 s more per 200 of them."""
    return 30 + n // 200


def split(n, k):
    """N subscribers over K processes: as even as can be, none empty."""
    k = max(1, min(k, n))
    return [n // k + (1 if i < n % k else 0) for i in range(k)]


def probe_sse(port, timeout=10):
    """(status, Content-Type) of GET /updates/events: the head only, then the connection is closed."""
    conn = http.client.HTTPConnection(BIND, port, timeout=timeout)
    try:
        conn.request("GET", SSE_PATH, headers={"Accept": "text/event-stream"})
        resp = conn.getresponse()
        return resp.status, resp.getheader("Content-Type", "")
    except (OSError, http.client.HTTPException) as e:
        return None, str(e)
    finally:
        conn.close()


def publish(port, rate, duration_s, timeout=10, workers=PUBLISHERS):
    """GET /updates?queries=1 every 1/rate s for duration_s s, open loop: each request is due at its time
    whatever the answers before it took, and goes out on one of `workers` keep-alive connections (each its
    own thread, reconnecting after an error); only when every one is waiting for an answer does a request
    go out late. Returns {sent, commits (2xx), failures {what: n}, late (sent over 100 ms after its time),
    wall_s (first due time to last answer), answer_ms_p50/p99/max (each request's own time)}."""
    n = int(rate * duration_s)
    start = time.monotonic() + 0.05
    due = queue.Queue()
    for i in range(n):
        due.put(start + i / rate)
    lock = threading.Lock()
    out = {"sent": 0, "commits": 0, "failures": {}, "late": 0}
    answers = []

    def failed(what):
        with lock:
            out["failures"][what] = out["failures"].get(what, 0) + 1

    def work():
        conn = None
        while True:
            try:
                at = due.get_nowait()
            except queue.Empty:
                break
            wait = at - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            t0 = time.monotonic()
            with lock:
                out["sent"] += 1
                out["late"] += t0 - at > 0.1
            try:
                if conn is None:
                    conn = http.client.HTTPConnection(BIND, port, timeout=timeout)
                conn.request("GET", PUBLISH_PATH)
                resp = conn.getresponse()
                resp.read()
                if 200 <= resp.status < 300:
                    with lock:
                        out["commits"] += 1
                else:
                    failed(f"status {resp.status}")
            except (OSError, http.client.HTTPException) as e:
                failed(type(e).__name__)
                if conn is not None:
                    conn.close()
                conn = None
            with lock:
                answers.append((time.monotonic() - t0) * 1000)
        if conn is not None:
            conn.close()

    threads = [threading.Thread(target=work, daemon=True) for _ in range(max(1, min(workers, n)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out["wall_s"] = max(0.0, time.monotonic() - start)
    answers.sort()
    for key, q in (("answer_ms_p50", 0.5), ("answer_ms_p99", 0.99)):
        out[key] = answers[min(len(answers) - 1, int(q * len(answers)))] if answers else None
    out["answer_ms_max"] = answers[-1] if answers else None
    return out


def merge(results):
    """The clients' results (kiln_sweep.subscribers) as one: counts added, histograms added bucket by
    bucket, extremes of extremes."""
    total = {"hist": {}, "connect_errors": {}, "end_errors": {}}
    add = ("subscribers", "held", "received", "chunks", "bytes", "negative", "gaps", "subscribers_with_gaps",
           "duplicates", "reloads", "other_events", "malformed", "ended", "silent", "with_events", "first_id_sum",
           "last_id_sum", "cpu_user_s", "cpu_sys_s")
    for key in add:
        total[key] = sum(r.get(key) or 0 for r in results)
    for key, pick in (("max_us", max), ("first_id_min", min), ("first_id_max", max), ("last_id_min", min),
                      ("last_id_max", max), ("per_subscriber_min", min), ("per_subscriber_max", max)):
        values = [r[key] for r in results if r.get(key) is not None]
        total[key] = pick(values) if values else None
    for r in results:
        for b, n in r["hist"].items():
            total["hist"][b] = total["hist"].get(b, 0) + n
        for table in ("connect_errors", "end_errors"):
            for what, n in r[table].items():
                total[table][what] = total[table].get(what, 0) + n
    total["bucket_us"] = results[0]["bucket_us"] if results else 100
    return total


def percentile_ms(hist, bucket_us, q):
    """The q-quantile (0..1) of a {bucket: count} histogram in ms, at the bucket's upper edge; None when
    it is empty."""
    total = sum(hist.values())
    if not total:
        return None
    rank, seen = q * total, 0
    for b in sorted(hist, key=int):
        seen += hist[b]
        if seen >= rank:
            return (int(b) + 1) * bucket_us / 1000
    return None


def missed_ends(m):
    """Events a subscriber never saw before its first one or after its last one, over all subscribers that
    received any (the first commit's id and the last one are the smallest first id and the largest last
    id any subscriber saw): (before its first, after its last)."""
    if not m["with_events"]:
        return 0, 0
    return (m["first_id_sum"] - m["first_id_min"] * m["with_events"],
            m["last_id_max"] * m["with_events"] - m["last_id_sum"])


def log_problems(log, start_offset, limit=5):
    """(count, the first `limit`) lines of the server's log from start_offset that look like trouble."""
    try:
        with open(log, "rb") as f:
            f.seek(start_offset)
            text = f.read().decode(errors="replace")
    except OSError:
        return 0, []
    lines = [line for line in text.splitlines() if LOG_PROBLEM.search(line)]
    return len(lines), [line[:300] for line in lines[:limit]]


class Clients:
    """K subscriber processes (`client`: a JavaClient or a PythonClient) and what they print, read by one
    thread each: the last "connected" and "progress" lines per process."""

    def __init__(self, client, port, counts, base, out, wrap, connect_s, deadline_s):
        self.procs, self.state, self.results, self.errs = [], [], [], []
        in_flight = max(1, IN_FLIGHT // len(counts))
        for i, n in enumerate(counts):
            result = Path(f"{base}-client{i + 1}.json")
            err = Path(f"{base}-client{i + 1}.err")
            cmd = wrap(client.command(["--host", BIND, "--port", str(port), "--path", SSE_PATH, "--count", str(n),
                                       "--in-flight", str(in_flight), "--connect-timeout", str(connect_s),
                                       "--deadline", str(deadline_s), "--result", str(result)]))
            records.log_command(out, cmd)
            with open(err, "w") as e:
                p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=e, text=True,
                                     env=client.env)
            state = {}
            threading.Thread(target=self._read, args=(p, state), daemon=True).start()
            self.procs.append(p)
            self.state.append(state)
            self.results.append(result)
            self.errs.append(err)

    @staticmethod
    def _read(proc, state):
        for line in proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            state[msg.get("event")] = msg

    @property
    def pids(self):
        return [p.pid for p in self.procs]

    def wait_connected(self, timeout_s):
        """True once every process said "connected" (or ended) within timeout_s."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if all("connected" in s or p.poll() is not None for s, p in zip(self.state, self.procs)):
                return True
            time.sleep(0.2)
        return False

    def held(self):
        return sum(s.get("connected", {}).get("held", 0) for s in self.state)

    def received(self):
        return sum(s.get("progress", {}).get("received", 0) for s in self.state)

    def first_id(self):
        """The smallest first id any subscriber counted, after a fresh progress line from each process."""
        self._fresh()
        ids = [s.get("progress", {}).get("first_id") for s in self.state]
        return min((i for i in ids if i is not None), default=None)

    def last_id(self):
        return max((s.get("progress", {}).get("last_id", 0) for s in self.state), default=0)

    def _fresh(self, timeout_s=3):
        """Waits until every live process has printed a progress line since this call began."""
        for s in self.state:
            s.pop("progress", None)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and any("progress" not in s and p.poll() is None
                                                  for s, p in zip(self.state, self.procs)):
            time.sleep(0.1)

    def restart(self, after_id, timeout_s=5):
        """Every process drops what it counted and counts again from the event after `after_id`; True
        once each says so (its progress line's "from")."""
        for p in self.procs:
            try:
                p.stdin.write(f"from {after_id}\n")
                p.stdin.flush()
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if all(s.get("progress", {}).get("from") == after_id or p.poll() is not None
                   for s, p in zip(self.state, self.procs)):
                return True
            time.sleep(0.1)
        return False

    def drain(self, expected, max_s, quiet_s):
        """Waits until the clients received `expected` events, nothing arrived for quiet_s, or max_s
        passed; returns the seconds waited."""
        start = last_change = time.monotonic()
        seen = self.received()
        while time.monotonic() - start < max_s:
            now = self.received()
            if now >= expected:
                break
            if now != seen:
                seen, last_change = now, time.monotonic()
            elif time.monotonic() - last_change >= quiet_s:
                break
            time.sleep(0.25)
        return time.monotonic() - start

    def stop(self, timeout_s=120):
        """Tells every process to stop, waits for its result (killing what does not end in time);
        returns (results of those that wrote one, errors: what went wrong with the others)."""
        for p in self.procs:
            try:
                p.stdin.write("stop\n")
                p.stdin.close()
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + timeout_s
        for p in self.procs:
            try:
                p.wait(timeout=max(1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        results, errors = [], []
        for i, (p, f, err) in enumerate(zip(self.procs, self.results, self.errs), 1):
            if f.is_file():
                results.append(json.loads(f.read_text()))
            else:
                tail = err.read_text(errors="replace").strip().splitlines() if err.is_file() else []
                errors.append(f"client {i} exited {p.returncode} without a result"
                              + (f": {tail[-1]}" if tail else ""))
            if err.is_file() and err.stat().st_size == 0:
                err.unlink()
        return results, errors

    def kill(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()


class Fanout:
    """Measures each server fanning events out, one fresh server per subscriber count. Reads the plan
    (preflight.Plan), starts and stops the servers through `servers` (servers.Servers), runs the
    subscribers with `client` (JavaClient or PythonClient), writes under the results directory `out`."""

    def __init__(self, plan, servers, out, client):
        self.plan, self.servers, self.out, self.client = plan, servers, out, client

    def measure(self, rnd, server):
        for step in self.plan.steps:
            r = self.servers.start(server, rnd)
            if r is None:
                continue
            run = self._step(rnd, r, step)
            records.append(self.out, records.FANOUT, run)
            self._progress(run)
            if not run.server_alive:
                message = f"{server.name} died holding {step.label} subscribers (log: {r.log})"
                note(message)
                records.append(self.out, records.PROBLEMS, records.Problem(rnd, server.name, message))
            self.servers.stop()
            time.sleep(self.plan.timing.cooldown_s)

    def _step(self, rnd, r, step):
        n, name, plan = step.concurrency, r.server.name, self.plan
        rel = f"raw/r{rnd}-{name}-n{n}"
        log_offset = r.log.stat().st_size if r.log.is_file() else 0
        run = records.FanoutRun(round=rnd, server=name, requested=step.requested, subscribers=n,
                                cap_reason=step.cap_reason, client_processes=0, rate=plan.rate,
                                duration_s=plan.duration, client=self.client.name)
        clients, kills0 = None, None
        try:
            deadline = time.monotonic() + HEALTH_S
            while http_status(r.port, "/healthz", timeout=5) != "200":
                if time.monotonic() > deadline or r.proc.poll() is not None:
                    raise RuntimeError(f"/healthz did not answer 200 within {HEALTH_S} s")
                time.sleep(0.5)
            status, kind = probe_sse(r.port)
            if status != 200 or not kind.startswith("text/event-stream"):
                raise RuntimeError(f"GET {SSE_PATH} answered {status or 'nothing'} ({kind or 'no Content-Type'}), "
                                   "not a 200 text/event-stream: this server has no event stream")
            self.servers.wait_idle()
            java = plan.javas.get(name)
            jcmd = pinning.tool(java.path, "jcmd") if java else None
            if jcmd:
                before = idle.class_histogram(jcmd, r.proc.pid, self.out / f"{rel}-histogram-before.txt")
                run.heap_before_bytes, run.histogram_before = before.bytes, f"{rel}-histogram-before.txt"
            run.rss_before_kb = measure.status_kb("VmRSS", r.pids)
            if r.group is not None:
                r.group.reset_peak()
                kills0 = r.group.read().oom_kills

            # Connect.
            counts = split(n, plan.client_processes)
            run.client_processes = len(counts)
            connect_s = connect_timeout_s(n)
            budget = connect_s + 3 * plan.duration + DRAIN_MAX_S + 300
            wrap = (lambda cmd: r.group.wrap(plan.on_client_cpu(cmd))) if r.group is not None else plan.on_client_cpu
            start = time.monotonic()
            clients = Clients(self.client, r.port, counts, self.out / rel, self.out, wrap, connect_s, budget)
            clients.wait_connected(connect_s + 30)
            run.connect_s = round(time.monotonic() - start, 2)
            run.held = clients.held()
            deadline = time.monotonic() + 30
            while idle.established(r.port) < run.held and time.monotonic() < deadline:
                time.sleep(0.2)
            run.established = idle.established(r.port)

            # Idle: what holding them costs.
            self.servers.wait_idle()
            if jcmd:
                after = idle.class_histogram(jcmd, r.proc.pid, self.out / f"{rel}-histogram-after.txt")
                run.heap_after_bytes, run.histogram_after = after.bytes, f"{rel}-histogram-after.txt"
            run.rss_after_kb = measure.status_kb("VmRSS", r.pids)

            # Warm-up: commits at the same rate whose events are then dropped from the counts. Their ids are
            # the first one the subscribers saw and the next ones, one per commit.
            warm = publish(r.port, plan.rate, min(WARMUP_S, plan.duration))
            run.warmup_commits = warm["commits"]
            clients.drain(run.warmup_commits * run.held, DRAIN_MAX_S, QUIET_S)
            first = clients.first_id()
            run.warmup_last_id = max(clients.last_id(), first + warm["sent"] - 1 if first is not None else 0)
            if not clients.restart(run.warmup_last_id):
                raise RuntimeError("the subscriber processes did not restart their counts after the warm-up")

            # Publish, then drain.
            ticks0, client0, t0 = measure.cpu_ticks(r.pids), measure.cpu_ticks(clients.pids), time.monotonic()
            received0 = clients.received()
            pub = publish(r.port, plan.rate, plan.duration)
            run.publish_s = round(pub["wall_s"], 2)
            run.sent, run.commits, run.publish_late = pub["sent"], pub["commits"], pub["late"]
            run.publish_answer_ms_p50, run.publish_answer_ms_p99, run.publish_answer_ms_max = (
                round(pub[k], 1) if pub[k] is not None else None
                for k in ("answer_ms_p50", "answer_ms_p99", "answer_ms_max"))
            run.publish_failures = _counts_text(pub["failures"])
            run.expected = run.commits * run.held
            run.drain_s = round(clients.drain(received0 + run.expected, DRAIN_MAX_S, QUIET_S), 2)
            run.wall_s = round(time.monotonic() - t0, 3)
            run.server_cpu_ticks = measure.cpu_ticks(r.pids) - ticks0
            run.client_cpu_ticks = measure.cpu_ticks(clients.pids) - client0
            run.client_rss_kb = measure.status_kb("VmRSS", clients.pids)
            run.rss_hwm_kb = measure.status_kb("VmHWM", r.pids)
        except (RuntimeError, ValueError, OSError, subprocess.TimeoutExpired) as e:
            run.error = str(e)
        finally:
            if clients is not None:
                results, errors = clients.stop()
                clients.kill()
                self._results(run, rel, results, errors)
        if r.group is not None:
            g = r.group.read()
            run.cgroup_peak_bytes = g.peak_bytes
            run.cgroup_oom_kills = None if g.oom_kills is None or kills0 is None else g.oom_kills - kills0
        run.server_alive = measure.alive(r.proc.pid)
        run.log_problem_lines, run.log_problems = log_problems(r.log, log_offset)
        return run

    def _results(self, run, rel, results, errors):
        """The clients' results, merged, into the run; the merged histogram to raw/."""
        if errors:
            run.client_errors = "; ".join(errors)
        if not results:
            return
        m = merge(results)
        (self.out / f"{rel}-latency.json").write_text(json.dumps(
            {"bucket_us": m["bucket_us"], "hist": m["hist"], "max_us": m["max_us"]}) + "\n")
        run.latency_histogram = f"{rel}-latency.json"
        run.held = m["held"]
        run.connect_errors = _counts_text(m["connect_errors"])
        run.received, run.chunks, run.bytes = m["received"], m["chunks"], m["bytes"]
        for q, key in ((0.5, "p50_ms"), (0.99, "p99_ms")):
            setattr(run, key, percentile_ms(m["hist"], m["bucket_us"], q))
        run.max_ms = m["max_us"] / 1000 if m["max_us"] is not None else None
        run.negative = m["negative"]
        run.gaps, run.subscribers_with_gaps, run.duplicates = m["gaps"], m["subscribers_with_gaps"], m["duplicates"]
        run.reloads, run.other_events, run.malformed = m["reloads"], m["other_events"], m["malformed"]
        run.missed_before_first, run.missed_after_last = missed_ends(m)
        run.silent = run.held - m["with_events"]
        run.ended = m["ended"]
        run.end_errors = _counts_text(m["end_errors"])
        run.per_subscriber_min, run.per_subscriber_max = m["per_subscriber_min"], m["per_subscriber_max"]
        run.first_id, run.last_id = m["first_id_min"], m["last_id_max"]

    def _progress(self, run):
        row = report.fanout_row(run, measure.CLK_TCK)
        print(f"[round {run.round}/{self.plan.rounds}] {run.server:<12} {row['label']} subscribers: held {run.held}"
              f" in {run.connect_s} s  heap {report.fmt(row['heap_bytes_per_sub'])} B/sub  "
              f"RSS {report.fmt(row['rss_bytes_per_sub'])} B/sub  commits {run.commits}  "
              f"deliveries {report.fmt(run.received)}/{report.fmt(run.expected)} "
              f"({report.fmt(row['deliveries_per_s'])}/s)  p50 {report.fmt(run.p50_ms, 1)} ms  "
              f"p99 {report.fmt(run.p99_ms, 1)} ms  max {report.fmt(run.max_ms, 1)} ms  "
              f"gaps {run.gaps}  dropped {run.ended}  reloads {run.reloads}  "
              f"CPU {report.fmt(row['cpu_us_per_delivery'], 2)} us/delivery  "
              f"client CPU {report.fmt(row['client_cpu_pct'])}% "
              f"({report.fmt(row['client_cpu_share'], 2)} of the server's)  "
              f"/updates p99 {report.fmt(run.publish_answer_ms_p99, 1)} ms, {run.publish_late} late"
              + (f"  OOM kills {run.cgroup_oom_kills}" if run.cgroup_oom_kills else "")
              + (f"  error: {run.error}" if run.error else "")
              + (f"  ({run.client_errors})" if run.client_errors else ""), flush=True)


def _counts_text(counts):
    return ", ".join(f"{n} {what}" for what, n in sorted(counts.items(), key=lambda kv: -kv[1]))
