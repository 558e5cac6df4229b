"""./ab-sweep.sh --postgres: the database table. Per kiln front end named (kilim, say), four setups on one
machine, each loaded in turn with GET /db, /queries?queries=20 and /updates?queries=5 (TechEmpower's
database tests): the front end over LMDB; over PostgreSQL; two of it behind nginx over PostgreSQL
(deploy/nginx/kiln-cluster.conf); and the peer anchor, Vert.x with its reactive PostgreSQL client
(bench-vertx), over the same PostgreSQL. One PostgreSQL server for the whole run (scripts/postgres.sh,
fsync and synchronous_commit on). Per setup and path: req/s, and CPU per request of the server's
processes (JVMs, nginx) and of PostgreSQL's, each setup measured in every round, medians over the
rounds. Nothing is pinned: the client, the servers and PostgreSQL share the machine's CPUs."""

import datetime
import json
import os
import statistics
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from kiln_sweep import ROOT, SweepError, clients, measure, note, registry, servers

PATHS = ("/db", "/queries?queries=20", "/updates?queries=5")
CONCURRENCY = 256
DURATION_S = 10
ROUNDS = 3
VERTX = registry.Server("vertx", "jar", "bench-vertx", "bench-vertx/target/vertx-anchor.jar", "17+")
RESULTS = "database.jsonl"


@dataclass(frozen=True)
class Setup:
    """One way of serving the paths: a front end (or the anchor) over an engine, alone or twice behind nginx."""
    name: str
    server: registry.Server
    postgres: bool
    copies: int = 1


@dataclass
class Row:
    """One timed run: a setup, a path, a round; CPU in microseconds per request answered."""
    round: int
    setup: str
    path: str
    concurrency: int
    complete: int
    rps: float
    failures: int
    server_us: float
    postgres_us: float
    raw: str


def setups(front_ends):
    """The setups measured for the front ends named, in order, then the anchor."""
    out = []
    for s in front_ends:
        out += [Setup(f"{s.name} lmdb", s, False), Setup(f"{s.name} postgresql", s, True),
                Setup(f"2 x {s.name} + nginx, postgresql", s, True, 2)]
    return out + [Setup("vertx postgresql", VERTX, True)]


def main(opts):
    """The run the options ask for; its exit status. Raises SweepError when it cannot run."""
    known = registry.known(ROOT)
    names = opts.servers or ["kilim"]
    front_ends = []
    for n in names:
        s = known.get(n)
        if s is None or s.kind != "jar":
            raise SweepError(f"--postgres measures kiln front ends (frontends.conf), not '{n}'", usage=True)
        front_ends.append(s)
    if opts.concurrency and len(opts.concurrency) != 1:
        raise SweepError("--postgres loads at one concurrency: give --concurrency N", usage=True)
    concurrency = opts.concurrency[0] if opts.concurrency else CONCURRENCY
    duration, rounds = opts.duration or DURATION_S, opts.rounds or ROUNDS
    out = Path(opts.out or ROOT / "results" / f"{datetime.date.today()}-postgres-{'-'.join(names)}")
    (out / "raw").mkdir(parents=True, exist_ok=True)
    (out / "logs").mkdir(exist_ok=True)
    plan = setups(front_ends)
    print(f"ab-sweep --postgres: {len(plan)} setups x {len(PATHS)} paths x {rounds} rounds, c={concurrency}, "
          f"{duration} s each after a {max(1, duration // 2)} s warm-up; results in {out}", flush=True)
    javas = {s.server.name: servers.Java(servers.find_java(ROOT, s.server.jdk)) for s in plan}
    for s in {p.server.name: p.server for p in plan}.values():
        if registry.jar_outdated(ROOT, s):
            if not opts.build:
                raise SweepError(f"{s.jar} is missing or older than its sources (--no-build)")
            note(f"building {s.jar}")
            servers.build(ROOT, s, out / "logs" / f"build-{s.module}.log")
    tmp = Path(tempfile.mkdtemp(prefix="kiln-sweep-postgres."))
    os.chmod(tmp, 0o755)  # as root, PostgreSQL runs as the postgres user: it must enter this directory
    pg = Postgres(tmp / "postgres")
    try:
        pg.start()
        for rnd in range(1, rounds + 1):
            order = plan[rnd - 1:] + plan[:rnd - 1]  # a different setup first in each round
            for setup in order:
                with Started(setup, javas[setup.server.name], pg, tmp, out, rnd) as running:
                    for path in PATHS:
                        row = timed(running, pg, path, concurrency, duration, out, rnd)
                        with open(out / RESULTS, "a") as f:
                            f.write(json.dumps(asdict(row)) + "\n")
                        print(f"[round {rnd}/{rounds}] {setup.name:<34} {path:<22} {row.rps:>8.0f} req/s  failed {row.failures}"
                              f"  server {row.server_us:.0f} us/req  postgres {row.postgres_us:.0f} us/req", flush=True)
    finally:
        pg.stop()
        subprocess.run(["rm", "-rf", str(tmp)], check=False)
    table = markdown(read(out), concurrency)
    (out / "table.md").write_text(table)
    print("\n" + table)
    return 0


class Postgres:
    """The run's PostgreSQL server, by scripts/postgres.sh, on a free port."""

    def __init__(self, directory):
        self.dir, self.port = directory, servers.free_port()

    @property
    def url(self):
        return f"postgresql://kiln@127.0.0.1:{self.port}/kiln"

    def start(self):
        script("init", str(self.dir), str(self.port))

    def stop(self):
        if (self.dir / "postmaster.pid").is_file():
            script("stop", str(self.dir), "fast")

    def pids(self):
        """The postmaster and its children (a backend per connection, the background workers)."""
        pid = int((self.dir / "postmaster.pid").read_text().split()[0])
        return [pid] + measure.children(pid)


def script(*args):
    out = subprocess.run([str(ROOT / "scripts" / "postgres.sh"), *args], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SweepError(f"scripts/postgres.sh {' '.join(args)} failed: {out.stdout}{out.stderr}")


class Started:
    """A setup running: its processes started and ready, stopped on exit; `port` is where the client goes."""

    def __init__(self, setup, java, pg, tmp, out, rnd):
        self.setup, self.java, self.pg, self.tmp, self.out, self.rnd = setup, java, pg, tmp, out, rnd
        self.procs, self.nginx_dir, self.port = [], None, None

    def __enter__(self):
        ports = [servers.free_port() for _ in range(self.setup.copies)]
        for i, port in enumerate(ports):
            self._start_java(port, i)
        if self.setup.copies == 1:
            self.port = ports[0]
        else:
            self.port = servers.free_port()
            self.nginx_dir = self.tmp / f"nginx-r{self.rnd}"
            env = dict(os.environ, PORT=str(self.port), KILN_PORTS=" ".join(map(str, ports)))
            done = subprocess.run([str(ROOT / "scripts" / "cluster.sh"), "nginx", str(self.nginx_dir)], env=env,
                                  capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise SweepError(f"nginx did not start: {done.stdout}{done.stderr}")
        for path in PATHS:
            status = servers.http_status(self.port, path)
            if status != "200":
                raise SweepError(f"{self.setup.name} answered GET {path} with {status or 'nothing'}")
        return self

    def _start_java(self, port, index):
        s = self.setup.server
        if s is VERTX:
            cmd = [self.java.path, *self.java.flags(None), "-jar", s.jar, "--port", str(port), "--db", self.pg.url]
            ready = f"vertx-anchor listening on http://127.0.0.1:{port}/"
        else:  # the sweep's own command line; --db wins over --data (then an empty directory)
            cmd = servers.command(s, self.java, None, port, self.tmp / f"lmdb-r{self.rnd}-{index}", None,
                                  args_extra=["--db", self.pg.url] if self.setup.postgres else [])
            ready = f"listening on http://{servers.BIND}:{port}/"
        log = self.out / "logs" / f"r{self.rnd}-{self.setup.name.replace(' ', '_').replace(',', '')}-{index}.log"
        with open(log, "w") as f:
            proc = subprocess.Popen(cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.procs.append(proc)
        for _ in range(servers.READY_S * 10):
            if proc.poll() is not None:
                raise SweepError(f"{self.setup.name} exited before it was ready (log: {log})")
            if ready in log.read_text(errors="replace"):
                return
            time.sleep(0.1)
        raise SweepError(f"{self.setup.name} was not ready within {servers.READY_S} s (log: {log})")

    def pids(self):
        pids = [p.pid for p in self.procs]
        if self.nginx_dir is not None:
            master = int((self.nginx_dir / "nginx" / "nginx.pid").read_text())
            pids += [master] + measure.children(master)
        return pids

    def __exit__(self, *exc):
        if self.nginx_dir is not None and (self.nginx_dir / "nginx" / "nginx.pid").is_file():
            subprocess.run(["kill", (self.nginx_dir / "nginx" / "nginx.pid").read_text().strip()], check=False)
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        return False


def timed(running, pg, path, concurrency, duration, out, rnd):
    """A warm-up of half the duration, then the timed run of `path`, with the CPU the setup's processes and
    PostgreSQL's used meanwhile."""
    url = f"http://{servers.BIND}:{running.port}{path}"
    name = f"r{rnd}-{running.setup.name.replace(' ', '_').replace(',', '')}-{path.strip('/').split('?')[0]}"
    warm = out / "raw" / f"{name}-warmup.txt"
    run_client(clients.command("ab", concurrency, 10_000_000, max(1, duration // 2), url), warm)
    time.sleep(1)
    server_pids, pg_pids = running.pids(), pg.pids()
    s0, p0 = measure.cpu_ticks(server_pids), measure.cpu_ticks(pg_pids)
    raw = out / "raw" / f"{name}.txt"
    run_client(clients.command("ab", concurrency, 10_000_000, duration, url), raw)
    s1, p1 = measure.cpu_ticks(server_pids), measure.cpu_ticks(pg_pids)
    result = clients.parse_output(raw, "ab")
    complete = result.complete if result else 0
    per = (lambda ticks: ticks / measure.CLK_TCK * 1e6 / complete) if complete else (lambda ticks: 0.0)
    return Row(rnd, running.setup.name, path, concurrency, complete, result.rps if result else 0.0,
               result.failures if result else 0, round(per(s1 - s0), 1), round(per(p1 - p0), 1), str(raw.relative_to(out)))


def run_client(cmd, output):
    with open(output, "w") as f:
        subprocess.run(["timeout", "-k", "5", "600", *cmd], stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                       check=False)


def read(out):
    """The rows of a results directory."""
    return [Row(**json.loads(line)) for line in (Path(out) / RESULTS).read_text().splitlines() if line.strip()]


def markdown(rows, concurrency):
    """The table: per setup and path, the medians over the rounds of req/s and of CPU per request (the
    server's processes, PostgreSQL's, both), and failures summed."""
    lines = [f"c={concurrency}; medians over {len({r.round for r in rows})} rounds; CPU in microseconds per request answered",
             "", "| setup | path | req/s | server CPU | PostgreSQL CPU | total CPU | failed |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for path in PATHS:
        for setup in dict.fromkeys(r.setup for r in rows):
            cell = [r for r in rows if r.setup == setup and r.path == path]
            if not cell:
                continue
            rps = statistics.median(r.rps for r in cell)
            server = statistics.median(r.server_us for r in cell)
            pg = statistics.median(r.postgres_us for r in cell)
            total = statistics.median(r.server_us + r.postgres_us for r in cell)
            lines.append(f"| {setup} | {path} | {rps:,.0f} | {server:,.0f} | {pg:,.0f} | {total:,.0f} | "
                         f"{sum(r.failures for r in cell)} |")
    return "\n".join(lines) + "\n"
