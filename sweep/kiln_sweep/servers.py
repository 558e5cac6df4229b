"""The servers a sweep measures: the java for each, their command lines, free ports, the nginx anchor's
configuration, jar builds, the readiness probe; and Servers, which starts one at a time, waits until
it is idle and stops it."""

import grp
import os
import pwd
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kiln_sweep import ROOT, SWEEP_DIR, SweepError, cgroup, measure, note, pinning, records, registry
from kiln_sweep.plan import port_candidates

BIND = "127.0.0.1"
# A server counts as idle below this CPU utilisation (% of one core) over a 0.5 s sample.
IDLE_PCT = 5
# A JVM front end populates its database before it prints its ready line.
READY_S = 120
# make demo's JVM flags, as a Java argument file: every Java server starts with them (docs/operations.md, "JVM flags").
JVM_OPTIONS = ROOT / "deploy" / "jvm.options"


# The dummy anchor's fixed heap (-Xms and -Xmx) unless --heap gives one.
DUMMY_HEAP = "256m"


def default_heap():
    """The heap's ceiling in JVM_OPTIONS (its -Xmx, e.g. '256m'): the sweep's heap unless --heap sets one."""
    m = re.search(r"^-Xmx(\S+)", JVM_OPTIONS.read_text(), re.MULTILINE)
    if not m:
        raise SweepError(f"{JVM_OPTIONS} has no -Xmx line")
    return m.group(1)


class Java:
    """The java binary that runs a server: its path, feature version and `java -version` line."""

    def __init__(self, path):
        self.path = path
        out = subprocess.run([path, "-version"], capture_output=True, text=True, check=False)
        self.version_line = ((out.stderr or out.stdout).splitlines() or [""])[0]
        m = re.search(r'"(\d+)', self.version_line)
        if not m:
            raise SweepError(f"cannot read the version of {path}: {self.version_line}")
        self.major = 8 if m.group(1) == "1" else int(m.group(1))  # "1.8.0_..."

    def flags(self, heap, options=JVM_OPTIONS):
        """make demo's flags (JVM_OPTIONS, or another Java argument file), then -Xms and -Xmx `heap` when
        given (a fixed heap), then what this JDK needs for lmdbjava (and Netty: native access, Unsafe)."""
        flags = [f"@{options}", *([f"-Xms{heap}", f"-Xmx{heap}"] if heap else [])]
        if self.major >= 22:
            flags.append("--enable-native-access=ALL-UNNAMED")
        if self.major >= 23:  # lmdbjava uses sun.misc.Unsafe, which JDK 23+ warns about on stderr
            flags.append("--sun-misc-unsafe-memory-access=allow")
        return flags

    def javac(self):
        """The javac beside this java, else the one on the PATH (None when there is none)."""
        beside = Path(os.path.realpath(self.path)).parent / "javac"
        return str(beside) if beside.is_file() else shutil.which("javac")

    def compile(self, source, classes):
        """Compiles one of the sweep's single-file programs (sweep/DummyServer.java, sweep/FanoutClient.java)
        into the directory `classes` with javac(); SweepError with javac's own complaint when it fails."""
        javac = self.javac()
        if not javac:
            raise SweepError(f"javac not found beside {self.path}: {Path(source).name} is compiled with javac: "
                             "apt-get install -y openjdk-17-jdk-headless")
        done = subprocess.run([javac, "-d", str(classes), str(source)], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SweepError(f"cannot compile {source}: {(done.stderr or done.stdout).strip()}")


def find_java(root, jdk_range):
    """The path of the java for a front end's JDK range (17, 17+, 21+), chosen by scripts/find-java.sh,
    which tries $JAVA first. Raises SweepError with the script's message when no JDK fits."""
    out = subprocess.run([str(Path(root) / "scripts" / "find-java.sh"), jdk_range], capture_output=True, text=True,
                         check=False)
    if out.returncode != 0:
        raise SweepError(out.stderr.strip() or f"find-java.sh {jdk_range} failed")
    return out.stdout.strip()


def http_status(port, path, timeout=10):
    """The status code of one HTTP/1.0 GET on BIND:port, or None when it gets no answer."""
    try:
        with socket.create_connection((BIND, port), timeout=timeout) as s:
            s.sendall(f"GET {path} HTTP/1.0\r\nHost: {BIND}\r\n\r\n".encode())
            with s.makefile("rb") as f:
                line = f.readline(200).decode("latin-1")
    except OSError:
        return None
    m = re.match(r"HTTP/1\.[01] (\d{3})", line)
    return m.group(1) if m else None


def sockets_on_port(port, time_wait=True):
    """`ss` lines of the TCP sockets using `port` locally (listening, connected, TIME_WAIT if asked)."""
    cmd = ["ss", "-Htan"] + ([] if time_wait else ["exclude", "time-wait"]) + [f"sport = :{port}"]
    return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout.splitlines()


def check_port_free(port):
    """A TIME_WAIT socket on the port does not stop a listener with SO_REUSEADDR; anything else does."""
    held = sockets_on_port(port, time_wait=False)
    if held:
        raise SweepError("\n".join(held[:3]) + f"\nport {port} is in use (above); choose another --port or leave it"
                         " out to pick a free one")


def free_port():
    """A port no socket uses, outside the kernel's ephemeral range where there is room for it."""
    low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    start, end = port_candidates(low, high)
    for _ in range(200):
        p = random.randint(start, end)
        if not sockets_on_port(p):
            return p
    raise SweepError(f"found no free port in {start}..{end} after 200 tries")


def nginx_conf(template, directory, port, nofile, max_concurrency):
    """The nginx anchor's configuration, from sweep/nginx.conf.template."""
    user_line = ""
    if os.geteuid() == 0:
        # Running as root, nginx would hand the worker to "nobody": keep it the current user.
        user_line = f"user {pwd.getpwuid(os.getuid()).pw_name} {grp.getgrgid(os.getgid()).gr_name};"
    # Well above the largest step so nginx never starts "reusing connections" (1/16 rule, FACTS.md).
    values = {"DIR": str(directory), "PORT": str(port), "USER_LINE": user_line, "NOFILE": nofile,
              "WORKER_CONNECTIONS": str(max_concurrency + max_concurrency // 4 + 1024)}
    return re.sub("@(" + "|".join(values) + ")@", lambda m: values[m.group(1)], Path(template).read_text())


def build(root, server, log):
    """Runs the Maven build of the server's module; raises SweepError with the log's tail on failure."""
    if not shutil.which("mvn"):
        raise SweepError(f"building {server.jar} needs Maven: apt-get install -y maven")
    with open(log, "w") as f:
        rc = subprocess.run(["mvn", "-B", "-q", "-DskipTests", "-pl", server.module, "-am", "package"], cwd=root,
                            stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, check=False).returncode
    if rc != 0:
        tail = "\n".join(Path(log).read_text(errors="replace").splitlines()[-30:])
        raise SweepError(f"{tail}\nthe build of {server.module} failed (full log: {log})")
    if not (Path(root) / server.jar).is_file():
        raise SweepError(f"the build of {server.module} succeeded but made no {server.jar}")


def jvm_flags(server, java, heap, same_flags=False):
    """The JVM flags of a Java server: make demo's (JVM_OPTIONS) for a front end; the dummy's fixed heap;
    an anchor's own argument file (its jvm_options), or with same_flags (--vps) make demo's like kiln."""
    if server.kind == "dummy":
        # The anchor keeps the fixed heap it was measured with before deploy/jvm.options (it holds a buffer
        # per connection: at c=19,500 a heap that grows from 16 MB up to 256 MB ran out).
        return java.flags(heap or DUMMY_HEAP)
    if server.jvm_options and not same_flags:
        return java.flags(heap, ROOT / server.jvm_options)
    return java.flags(heap)


def command(server, java, heap, port, data_dir, dummy_classes, jvm_extra=(), args_extra=(), same_flags=False):
    """The command line that starts `server` on BIND:port; data_dir holds a front end's database or
    nginx's configuration, logs and temp files. jvm_extra go to a JVM before the class or jar,
    args_extra after a front end's own arguments; same_flags: see jvm_flags."""
    if server.kind == "jar":
        return [java.path, *jvm_flags(server, java, heap), *jvm_extra, "-jar", server.jar, "--port", str(port), "--bind",
                BIND, "--data", str(data_dir), *server.args, *args_extra]
    if server.kind == "anchor":
        return [java.path, *jvm_flags(server, java, heap, same_flags), *jvm_extra, "-jar", server.jar, "--port",
                str(port), "--bind", BIND, *server.args]
    if server.kind == "dummy":
        return [java.path, *jvm_flags(server, java, heap), *jvm_extra, "-cp", str(dummy_classes), "DummyServer",
                "--port", str(port), "--bind", BIND]
    return ["nginx", "-p", str(data_dir), "-c", f"{data_dir}/nginx.conf", "-e", f"{data_dir}/error.log",
            "-g", "daemon off;"]


def ready_line(port):
    """The line a kiln front end (and the dummy, and netty-anchor) prints once it serves."""
    return re.compile(rf"^(kiln-[a-z-]+|[a-z]+-anchor) listening on http://{re.escape(BIND)}:{port}/$", re.MULTILINE)


# ---------------------------------------------------------------------------------------------
# Running them
# ---------------------------------------------------------------------------------------------
class Running:
    """A server this sweep started: the process, it and its children (measured), its port and log."""

    def __init__(self, server, proc, port, log, group=None, recorder=None):
        self.server, self.proc, self.port, self.log = server, proc, port, log
        self.pids = [proc.pid]
        self.group = group          # --vps: its cgroup.VpsCgroup
        self.recorder = recorder    # JDK 21+: its pinning.Recorder

    def adopt_children(self):
        """Once it serves: its children are measured with it (nginx's worker)."""
        self.pids = [self.proc.pid] + measure.children(self.proc.pid)


class Servers:
    """Starts the servers of a sweep one at a time (`running`, None between them) and stops only what it
    started. Reads the plan (preflight.Plan); writes the server logs, JFR recordings, commands.log and
    problems.jsonl under the results directory `out`, and the servers' data under `tmp`."""

    def __init__(self, plan, out, tmp):
        self.plan, self.out, self.tmp = plan, out, tmp
        self.running = None
        self.cgroup_count = 0
        self.live_groups = set()

    def prepare(self):
        """Builds missing or outdated jars (one build per module), compiles the dummy anchor."""
        built = set()
        for s in self.plan.selected:
            if s.jar and s.module not in built and registry.jar_outdated(ROOT, s):
                built.add(s.module)
                if not self.plan.opts.build:
                    if not (ROOT / s.jar).is_file():
                        raise SweepError(f"{s.name}: {s.jar} is missing (--no-build)")
                    note(f"{s.name}: {s.jar} is older than its sources; using it as it is (--no-build)")
                    continue
                log = self.out / "logs" / f"build-{s.module}.log"
                note(f"building {s.jar}: mvn -B -q -DskipTests -pl {s.module} -am package (log: {log})")
                build(ROOT, s, log)
            elif s.kind == "dummy":
                # Compiled once up front so the measured JVM does not also hold the source launcher's compiler.
                self.plan.javas["dummy"].compile(SWEEP_DIR / "DummyServer.java", self.tmp / "dummy")

    def start(self, server, rnd):
        """The Running server, or None (see _failed) when it does not start or does not answer GET path
        with a 2xx status."""
        plan, o = self.plan, self.plan.opts
        log = self.out / "logs" / f"r{rnd}-{server.name}.log"
        try:
            port = o.port or free_port()
            if o.port:
                check_port_free(port)
        except SweepError as e:
            return self._failed(rnd, server, log, f"{server.name}: {e}")
        data = Path(tempfile.mkdtemp(prefix=f"{server.name}.", dir=self.tmp))
        if server.kind == "nginx":
            (data / "nginx.conf").write_text(nginx_conf(
                SWEEP_DIR / "nginx.conf.template", data, port, plan.nofile, max(s.concurrency for s in plan.steps)))
        java = plan.javas.get(server.name)
        jvm_extra, jfr = plan.jvm_extra(server), None
        if plan.records_pinning(server):
            jfr = self.out / "raw" / f"r{rnd}-{server.name}-pinned.jfr"
            jvm_extra.append(pinning.jvm_flag(jfr))
        cmd = plan.on_server_cpu(command(server, java, o.heap, port, data, self.tmp / "dummy", jvm_extra,
                                         plan.server_args(server), same_flags=o.vps))
        group = None
        if o.vps:
            self.cgroup_count += 1
            group = cgroup.VpsCgroup(plan.cgroup_parents, f"{cgroup.PREFIX}{os.getpid()}-{self.cgroup_count}",
                                     plan.vps_cpu)
            self.live_groups.add(group)
            try:
                group.create()
            except SweepError as e:
                self.live_groups.discard(group)
                return self._failed(rnd, server, log, f"{server.name}: {e}")
            cmd = group.wrap(cmd)
        records.log_command(self.out, cmd)
        with open(log, "w") as f:
            proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        recorder = pinning.Recorder(java.path, proc.pid, jfr) if jfr else None
        self.running = Running(server, proc, port, log, group, recorder)
        ready = ready_line(port)
        for _ in range(READY_S * 10):
            if proc.poll() is not None:
                if server.kind == "nginx" and (data / "error.log").is_file():
                    with open(log, "a") as f:
                        f.write((data / "error.log").read_text(errors="replace"))
                return self._failed(rnd, server, log, f"{server.name} exited before it was ready (log: {log})")
            text = log.read_text(errors="replace")
            if server.kind != "nginx" and re.search(r'^Exception in thread "main"', text, re.MULTILINE):
                # Its main thread died, yet other threads may keep the JVM alive without ever serving.
                return self._failed(rnd, server, log, f"{server.name} failed while starting (log: {log})")
            if http_status(port, "/") if server.kind == "nginx" else ready.search(text):
                break
            time.sleep(0.1)
        else:
            return self._failed(rnd, server, log, f"{server.name} did not become ready within {READY_S} s (log: {log})")
        status = http_status(port, o.path)
        if not (status or "").startswith("2"):
            return self._failed(rnd, server, log, f"{server.name} answered GET {o.path} with '{status or 'nothing'}', "
                                "not 2xx: not measured (every response would count as a failure)")
        self.running.adopt_children()
        r = self.running
        print(f"[round {rnd}/{plan.rounds}] {server.name} listening on {BIND}:{r.port} "
              f"(pid {' '.join(map(str, r.pids))})", flush=True)
        return r

    def _failed(self, rnd, server, log, message):
        """A server that cannot be measured this round is reported (on stderr and in problems.jsonl,
        which the report shows) and stopped; the sweep goes on with the next server."""
        if log.is_file():
            sys.stderr.write("".join(f"{line}\n" for line in log.read_text(errors="replace").splitlines()[-20:]))
        print(f"ab-sweep: {message}", file=sys.stderr, flush=True)
        records.append(self.out, records.PROBLEMS, records.Problem(rnd, server.name, message))
        self.stop(quiet=True)
        return None

    def wait_idle(self):
        """(seconds waited, at 0.5 s resolution; whether the server's CPU fell under IDLE_PCT % of one
        core for 0.5 s) within the longest wait."""
        for i in range(2 * self.plan.timing.idle_max_s):
            t0 = measure.cpu_ticks(self.running.pids)
            time.sleep(0.5)
            if (measure.cpu_ticks(self.running.pids) - t0) * 200 < IDLE_PCT * measure.CLK_TCK:
                return i / 2, True
        return self.plan.timing.idle_max_s, False

    def stop(self, quiet=False):
        """SIGTERM (the contract's clean stop), SIGKILL after 30 s; only the process this sweep started
        (nginx's master stops its own worker). Unless quiet, says so when it had to kill it or when it
        exited other than cleanly."""
        r, self.running = self.running, None
        if r is None:
            return
        r.proc.terminate()
        try:
            r.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            if not quiet:
                note(f"{r.server.name} did not stop within 30 s of SIGTERM: killing it")
            r.proc.kill()
            r.proc.wait()
        if r.group is not None:
            self._remove_group(r.group)
        # As a shell shows it; 143: a JVM without its own SIGTERM handling ends with the signal's
        # status, still a clean stop.
        status = 128 - r.proc.returncode if r.proc.returncode < 0 else r.proc.returncode
        if not quiet and status not in (0, 143):
            note(f"{r.server.name} exited with status {status} after SIGTERM (log: {r.log})")

    def close(self):
        """Whatever is still running or still has a --vps cgroup goes (a sweep that is stopped early)."""
        self.stop(quiet=True)
        for group in list(self.live_groups):
            self._remove_group(group)

    def _remove_group(self, group):
        """--vps: the server's cgroup goes with it (what is still inside was started there by this sweep)."""
        self.live_groups.discard(group)
        try:
            killed = group.remove()
        except SweepError as e:
            note(str(e))
            return
        if killed:
            note(f"killed process(es) {' '.join(map(str, killed))} left in {group.name} before removing it")
