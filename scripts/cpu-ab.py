#!/usr/bin/env python3
"""Side-by-side CPU per request of several Kilim jars (e.g. before and after a change), nginx and Netty.

Each server is started once and pinned to CPU 0 (the sweep's nginx anchor configuration; the sweep's
Netty anchor, bench-netty/, and with --vertx its Vert.x anchor, bench-vertx/, with --netty-io-uring the
Netty anchor again on Netty's io_uring transport, each built when missing or outdated and on its own JVM
flags; each jar on a fresh data directory), warmed up with 200,000 requests
per path, then per round, in an order rotated each
round, loaded with `ab -k` pinned to CPU 1: 300,000 requests at c <= 1,000, 600,000 above. Server CPU
comes from /proc/PID/stat before and after each run; between runs it waits until the server is idle.
Unlike ./ab-sweep.sh, whose every step is a fresh JVM, this measures warm JVMs, so small differences
between jars are not lost in JIT and start-up noise.

    scripts/cpu-ab.py before=/tmp/old/kiln-kilim.jar after=http-kilim/target/kiln-kilim.jar \\
        --rounds 4 --paths /hello,/db --concurrency 1000,19500

A jar may take server arguments after commas (`two=kiln-kilim.jar,--threads,2`), and JVM flags
after -J (`c1=kiln-kilim.jar,-J-XX:TieredStopAtLevel=1`, after deploy/jvm.options). With --shared
nothing is pinned: the servers and ab share every core, as on a small VPS where the client runs
beside the server, and nginx runs --nginx-workers workers (default 2 then); the figure to compare is
req/s, and each run also reports how the server's CPU split over its threads (e.g. kiln-selector).

Prints each run, then per path and concurrency each server's CPU per request, in all and in user space
(and with --shared its req/s), as a ratio to nginx's and to Netty's in the same round (per round, and
the median), and writes every run to OUT/results.json. The jars start with deploy/jvm.options, the flags
of `make demo`; Netty with bench-netty/jvm.options (TechEmpower's flags, kiln's heap ceiling) and Vert.x
with bench-vertx/jvm.options, or with --same-flags with deploy/jvm.options like the jars (as
./ab-sweep.sh --vps runs them). They serve /hello, /plaintext and /json only: they are left out of the
runs of other paths (/db). Loopback only; needs ab (apache2-utils), nginx, taskset, java (and mvn to
build the Netty anchor); about 4 minutes per round for two jars.

With --perf, every run also counts the server's system calls (`perf stat` on the sweep's events:
every call, and read, write, epoll_ctl, epoll_wait... by name; see sweep/kiln_sweep/perf.py) and
prints them per request, beside the CPU: the kernel's counting costs every server a little CPU alike.
"""
import argparse
import json
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "sweep"))
from kiln_sweep import SweepError, measure, perf, registry  # noqa: E402  the sweep's /proc readings, perf counts; its servers
from kiln_sweep.servers import JVM_OPTIONS, build, nginx_conf  # noqa: E402  make demo's JVM flags; the sweep's anchors
FIRST_PORT = 18100
ANCHORS = ("nginx", "netty")  # every ratio is also given to these
IO_URING_ANCHOR = "netty-io_uring"  # --netty-io-uring: the Netty anchor on Netty's io_uring transport
SHOWN_CALLS = 0.005  # a system call is named beside the total when made this often per request or more


def cpu_seconds(pids):
    return measure.cpu_ticks(pids) / measure.CLK_TCK


def cpu_and_user_seconds(pids):
    """(CPU seconds, of which in user space), from one read of each process's stat."""
    user, system = measure.cpu_ticks_split(pids)
    return (user + system) / measure.CLK_TCK, user / measure.CLK_TCK


def thread_cpu_seconds(pid):
    """{thread name: CPU seconds} of one process's threads (threads of one name are summed), from
    /proc/PID/task/TID/stat (/proc/TID/stat would give the whole process's)."""
    by_name = {}
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            name = (task / "comm").read_text().strip()
        except OSError:
            continue
        by_name[name] = by_name.get(name, 0) + cpu_seconds([f"{pid}/task/{task.name}"])
    return by_name


class Server:
    def __init__(self, name, proc, port, pin, paths=()):
        self.name, self.proc, self.port, self.pin, self.paths = name, proc, port, pin, paths
        self.perf_events = None  # --perf: the system call events to count during each run

    def serves(self, path):
        """Netty serves its three paths only; nginx answers every path, a jar every endpoint."""
        return not self.paths or path in self.paths

    def pids(self):
        children = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True).stdout.split()
        return [self.proc.pid] + [int(c) for c in children]

    def wait_idle(self):
        for _ in range(60):
            before = cpu_seconds(self.pids())
            time.sleep(1)
            if cpu_seconds(self.pids()) - before < 0.05:
                return

    def load(self, path, concurrency, requests):
        """One ab run: (server CPU µs per request, of which in user space, req/s, failed requests, completed
        requests, {thread name: share of the server's CPU}, {system call: calls per request} with --perf, else {})."""
        counting = None
        if self.perf_events:
            counting = subprocess.Popen(["perf", "stat", "-x,", "-e", ",".join(self.perf_events), "-p", ",".join(map(str, self.pids()))],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            time.sleep(1)  # attached before the client starts (an idle server makes next to no calls meanwhile)
        (before, user_before), threads_before = cpu_and_user_seconds(self.pids()), thread_cpu_seconds(self.proc.pid)
        out = subprocess.run([*(["taskset", "-c", "1"] if self.pin else []), "ab", "-k", "-q", "-c", str(concurrency), "-n", str(requests),
                              "-s", "60", f"http://127.0.0.1:{self.port}{path}"], capture_output=True, text=True).stdout
        after, user_after = cpu_and_user_seconds(self.pids())
        used, user = after - before, user_after - user_before
        threads = {name: cpu - threads_before.get(name, 0) for name, cpu in thread_cpu_seconds(self.proc.pid).items()}
        shares = {name: round(cpu / used, 3) for name, cpu in threads.items() if used > 0 and cpu / used >= 0.01}
        done = re.search(r"Complete requests:\s+(\d+)", out)
        done = int(done.group(1)) if done else 0
        # /db answers vary in length, which ab counts as failures: count the real ones only
        broken = re.search(r"\(Connect: (\d+), Receive: (\d+), Length: \d+, Exceptions: (\d+)\)", out)
        non2xx = re.search(r"Non-2xx responses:\s+(\d+)", out)
        failed = (sum(map(int, broken.groups())) if broken else 0) + (int(non2xx.group(1)) if non2xx else 0)
        rps = re.search(r"Requests per second:\s+([\d.]+)", out)
        calls = {}
        if counting:
            counting.send_signal(signal.SIGINT)
            total, by_name = perf.per_request(perf.parse_stat(counting.communicate(timeout=perf.STOP_S)[1]), done)
            calls = {"total": total, **by_name} if total is not None else {}
        return used * 1e6 / max(done, 1), user * 1e6 / max(done, 1), float(rps.group(1)) if rps else 0.0, failed, done, shares, calls


def jvm_anchor(name, work, same_flags):
    """(name, jar, JVM options file, paths) of one of the sweep's JVM anchors (netty, vertx), its jar built
    first (as ./ab-sweep.sh does) when it is missing or older than its sources."""
    server = registry.known(ROOT)[name]
    if registry.jar_outdated(ROOT, server):
        print(f"cpu-ab: building {server.jar} (mvn -B -q -DskipTests -pl {server.module} -am package)", flush=True)
        try:
            build(ROOT, server, work / f"build-{name}.log")
        except SweepError as e:
            raise SystemExit(f"cpu-ab: {e}")
    return name, str(ROOT / server.jar), f"@{JVM_OPTIONS if same_flags else ROOT / server.jvm_options}", server.paths, []


def start_servers(jars, work, nofile, steps, pin, nginx_workers, first_port, anchors):
    """nginx on first_port, then each jar, then each JVM anchor (see jvm_anchor())."""
    servers = []
    server_cpu = ["taskset", "-c", "0"] if pin else []
    nginx_dir = work / "nginx"
    nginx_dir.mkdir()
    conf = nginx_conf(ROOT / "sweep" / "nginx.conf.template", nginx_dir, first_port, str(nofile), max(steps))
    conf, n = re.subn(r"^worker_processes\s+\S+;", f"worker_processes {nginx_workers};", conf, flags=re.MULTILINE)
    if n != 1:
        raise SystemExit("cpu-ab: sweep/nginx.conf.template has no worker_processes line to set")
    (nginx_dir / "nginx.conf").write_text(conf)
    servers.append(Server("nginx", subprocess.Popen([*server_cpu, "nginx", "-p", str(nginx_dir), "-c", str(nginx_dir / "nginx.conf"),
                                                     "-e", str(nginx_dir / "error.log"), "-g", "daemon off;"]), first_port, pin))
    for i, (name, (jar, args)) in enumerate(jars.items(), 1):
        port = first_port + i
        log = open(work / f"{name}.log", "w")
        jvm = [a[2:] for a in args if a.startswith("-J")]
        args = [a for a in args if not a.startswith("-J")]
        proc = subprocess.Popen([*server_cpu, "java", f"@{JVM_OPTIONS}", *jvm, "-jar", jar, "--port", str(port), "--bind", "127.0.0.1",
                                 "--data", str(work / f"data-{name}"), *args],
                                stdout=log, stderr=subprocess.STDOUT)
        servers.append(Server(name, proc, port, pin))
    for i, (name, jar, flags, paths, args) in enumerate(anchors, len(jars) + 1):
        port = first_port + i
        log = open(work / f"{name}.log", "w")
        proc = subprocess.Popen([*server_cpu, "java", flags, "-jar", jar, "--port", str(port), "--bind", "127.0.0.1", *args],
                                stdout=log, stderr=subprocess.STDOUT)
        servers.append(Server(name, proc, port, pin, paths))
    deadline = time.time() + 60
    for s in servers[1:]:
        while f"listening on http://127.0.0.1:{s.port}/" not in (work / f"{s.name}.log").read_text():
            if s.proc.poll() is not None or time.time() > deadline:
                raise SystemExit(f"cpu-ab: {s.name} did not start; see {work / (s.name + '.log')}")
            time.sleep(0.2)
    time.sleep(1)
    return servers


def summary(results, names, anchors, paths, steps, figures):
    """Per figure and anchor: each other server's figure ÷ the anchor's in the same round."""
    for key, title in figures:
        for anchor in anchors:
            print(f"\n{title} ÷ {anchor}'s in the same round: per round (median)")
            for path in paths:
                for c in steps:
                    rows = [r for r in results if r["path"] == path and r["concurrency"] == c]
                    cells = []
                    for name in [n for n in [*names, *anchors] if n != anchor]:
                        ratios = []
                        for rnd in sorted({r["round"] for r in rows}):
                            base = [r[key] for r in rows if r["round"] == rnd and r["server"] == anchor]
                            mine = [r[key] for r in rows if r["round"] == rnd and r["server"] == name]
                            if base and mine and base[0]:
                                ratios.append(mine[0] / base[0])
                        if ratios:
                            cells.append(f"{name} {', '.join(f'{x:.2f}' for x in ratios)} ({statistics.median(ratios):.2f})")
                    print(f"  {path} c={c}: " + "; ".join(cells))


def syscall_summary(results, names, paths, steps):
    """--perf: each server's system calls per request, the median over the rounds, in total and by name."""
    print("\nsystem calls per request (perf stat), median over the rounds: total (by name)")
    for path in paths:
        for c in steps:
            for name in names:
                runs = [r["syscalls"] for r in results if r["path"] == path and r["concurrency"] == c and r["server"] == name
                        and r["syscalls"]]
                if not runs:
                    continue
                calls = {n: statistics.median(run.get(n, 0) for run in runs) for n in runs[0]}
                by_name = ", ".join(f"{n} {x:.3f}" for n, x in calls.items() if n != "total" and x >= SHOWN_CALLS)
                print(f"  {path} c={c} {name:10s} {calls['total']:.3f} ({by_name})")


def main(argv):
    p = argparse.ArgumentParser(prog="scripts/cpu-ab.py", description=__doc__.split("\n\n")[0],
                                epilog="See the module docstring for the method.")
    p.add_argument("jars", nargs="+", metavar="NAME=JAR[,ARG...]",
                   help="a runnable Kilim jar (kiln-kilim.jar), the name it is reported under, and server arguments")
    p.add_argument("--rounds", type=int, default=4, help="rounds over every server (default 4)")
    p.add_argument("--paths", default="/hello,/db", help="comma-separated paths (default /hello,/db)")
    p.add_argument("--concurrency", default="1000,19500", help="comma-separated ab -c values (default 1000,19500)")
    p.add_argument("--out", help="where results.json and the server logs go (default: a new temporary directory)")
    p.add_argument("--shared", action="store_true", help="pin nothing: servers and ab share every core (compare req/s)")
    p.add_argument("--nginx-workers", type=int, help="nginx worker processes (default 1, or 2 with --shared)")
    p.add_argument("--no-netty", dest="netty", action="store_false",
                   help="leave the Netty anchor out (it is left out of paths other than /hello, /plaintext and /json anyway)")
    p.add_argument("--vertx", action="store_true", help="add the Vert.x anchor (bench-vertx/) beside Netty")
    p.add_argument("--netty-io-uring", action="store_true",
                   help="add the Netty anchor on Netty's io_uring transport (netty-io_uring; Linux 5.9 or later) beside Netty on epoll")
    p.add_argument("--same-flags", action="store_true",
                   help="start Netty (and Vert.x) with deploy/jvm.options like the jars, not their own jvm.options")
    p.add_argument("--perf", action="store_true",
                   help="also count each server's system calls per request in every run (perf stat; root or perf_event_paranoid -1)")
    p.add_argument("--port", type=int, default=FIRST_PORT,
                   help=f"the first of the consecutive loopback ports the servers listen on (default {FIRST_PORT})")
    args = p.parse_args(argv)
    jars = {}
    for spec in args.jars:
        name, eq, rest = spec.partition("=")
        jar, *server_args = rest.split(",")
        if not eq or not Path(jar).is_file() or name in ("nginx", "netty", "vertx", IO_URING_ANCHOR):
            p.error(f"expected NAME=JAR[,ARG...] with an existing jar (and a name other than nginx, netty, {IO_URING_ANCHOR} "
                    f"or vertx), got '{spec}'")
        jars[name] = (jar, server_args)
    paths = args.paths.split(",")
    steps = [int(c) for c in args.concurrency.split(",")]
    nofile = int(subprocess.run(["sh", "-c", "ulimit -n"], capture_output=True, text=True).stdout)
    if max(steps) + 30 > nofile:
        p.error(f"c={max(steps)} needs more open files than the limit of {nofile} (ulimit -n)")
    for tool in ("ab", "nginx", "taskset", "java", "pgrep"):
        if shutil.which(tool) is None:
            p.error(f"{tool} not found (apt-get install apache2-utils nginx-light util-linux procps, and a JDK)")
    try:
        perf_events = perf.events() if args.perf else None
    except SweepError as e:
        p.error(str(e))
    work = Path(args.out or tempfile.mkdtemp(prefix="cpu-ab-")).resolve()  # absolute: nginx resolves its paths against its prefix
    work.mkdir(parents=True, exist_ok=True)
    anchors = [jvm_anchor(name, work, args.same_flags) for name, on in (("netty", args.netty), ("vertx", args.vertx)) if on]
    if args.netty_io_uring:
        _, jar, flags, served, _ = jvm_anchor("netty", work, args.same_flags)
        anchors.append((IO_URING_ANCHOR, jar, flags, served, ["--transport", "io_uring"]))
    servers = start_servers(jars, work, nofile, steps, not args.shared, args.nginx_workers or (2 if args.shared else 1), args.port,
                            anchors)
    results = []
    try:
        print(f"cpu-ab: servers in {work}; warming up", flush=True)
        for s in servers:
            for path in filter(s.serves, paths):
                s.load(path, 1000, 200_000)
            s.wait_idle()
            s.perf_events = perf_events  # counted from the first timed run on
        for rnd in range(1, args.rounds + 1):
            order = servers[(rnd - 1) % len(servers):] + servers[:(rnd - 1) % len(servers)]
            for path in paths:
                for c in steps:
                    for s in filter(lambda s: s.serves(path), order):
                        us, user_us, rps, failed, done, shares, calls = s.load(path, c, 300_000 if c <= 1000 else 600_000)
                        results.append(dict(round=rnd, server=s.name, path=path, concurrency=c, us=us, user_us=user_us, rps=rps,
                                            failed=failed, done=done, threads=shares, syscalls=calls))
                        split = "" if s.name == "nginx" else "  CPU by thread: " + ", ".join(
                            f"{t} {x:.0%}" for t, x in sorted(shares.items(), key=lambda kv: -kv[1]))
                        counted = "" if not calls else "  syscalls/request: " + ", ".join(
                            f"{n} {x:.3f}" for n, x in calls.items() if n == "total" or x >= SHOWN_CALLS)
                        print(f"round {rnd} {path} c={c} {s.name:10s} {us:6.1f} µs/request (user {user_us:4.2f}) {rps:9.0f} req/s"
                              f"  failed {failed}{split}{counted}",
                              flush=True)
                        s.wait_idle()
    finally:
        for s in servers:
            s.proc.terminate()
        for s in servers:
            try:
                s.proc.wait(20)
            except subprocess.TimeoutExpired:
                s.proc.kill()
    (work / "results.json").write_text(json.dumps(results, indent=1))
    figures = [("us", "CPU per request"), ("user_us", "user-space CPU per request")] + ([("rps", "req/s")] if args.shared else [])
    names = list(jars) + (["vertx"] if args.vertx else []) + ([IO_URING_ANCHOR] if args.netty_io_uring else [])
    summary(results, names, [a for a in ANCHORS if any(s.name == a for s in servers)], paths, steps, figures)
    if args.perf:
        syscall_summary(results, [s.name for s in servers], paths, steps)
    print(f"\nruns: {work / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
