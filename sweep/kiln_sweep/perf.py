"""--perf: what a server does during each timed run, by Linux perf (apt-get install -y linux-perf) attached
to its processes (Running.pids: the JVM, or nginx's master and worker) while the client runs:

- system calls by type: `perf stat -x,` counts the raw_syscalls:sys_enter tracepoint (every system call)
  and syscalls:sys_enter_NAME for the calls a server's request loop makes (read, write, writev,
  epoll_wait, epoll_pwait, epoll_pwait2, epoll_ctl, recvfrom, sendto, futex, accept4, io_uring_enter; those
  this kernel has: Netty's native transports wait in epoll_pwait* or io_uring_enter). Counting a
  tracepoint is done in the kernel, at each call's entry: cheap, but not free.
- a flat CPU profile: `perf record -F 499` (no call graphs), then `perf report --sort dso,sym`. A JVM's
  JIT-compiled methods get their names from /tmp/perf-PID.map, which `jcmd PID Compiler.perfmap`
  (JDK 17+) writes right after the timed run; the sweep keeps a copy beside the profile.

Both start with their events disabled (-D -1) and are enabled through a control FIFO that acknowledges,
so that counting has begun before the client starts; SIGINT ends them when the client has finished.
perf's own work runs on the client's CPU when the sweep pins, but the kernel's counting and sampling
costs the server's CPU a little: compare servers only within one --perf sweep."""

import os
import re
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path

from kiln_sweep import SweepError, pinning

TOTAL = "raw_syscalls:sys_enter"
SYSCALLS = (TOTAL,) + tuple(f"syscalls:sys_enter_{name}" for name in (
    "read", "write", "writev", "epoll_wait", "epoll_pwait", "epoll_pwait2", "epoll_ctl", "recvfrom", "sendto", "futex",
    "accept4", "io_uring_enter"))
SAMPLE_HZ = 499
# The profile's rows kept in raw/<run>-perf-top.txt, and in the run's record.
TOP = 15
TOP_RECORDED = 5
# perf report leaves out symbols under this share of the samples (%).
PERCENT_LIMIT = 1
# Seconds perf may take to attach and acknowledge, and to write its results after SIGINT.
START_S = 10
STOP_S = 60

INSTALL = "apt-get install -y linux-perf"


# ---------------------------------------------------------------------------------------------
# Before the sweep
# ---------------------------------------------------------------------------------------------
class PerfUnavailable(SweepError):
    """--perf cannot run here: the message says why. Exit status 2, as for --vps without its cgroups."""

    def __init__(self, message):
        super().__init__(message, usage=False)
        self.exit_status = 2


def events():
    """The system call events this sweep counts, as this kernel has them; raises PerfUnavailable when
    perf cannot count them here."""
    error = check()
    if error:
        raise PerfUnavailable(error)
    found = available()
    if TOTAL not in found:
        raise PerfUnavailable(f"--perf: perf list shows no {TOTAL} tracepoint on this kernel")
    return found


def check():
    """Why --perf cannot run here ("" when it can): perf missing, or not allowed to count the system
    call tracepoint (perf_event_paranoid, not root, no tracefs)."""
    if not shutil.which("perf"):
        return f"--perf needs perf: {INSTALL}"
    try:
        out = subprocess.run(["perf", "stat", "-x,", "-e", TOTAL, "--", "true"], capture_output=True, text=True,
                             timeout=30, check=False)
    except subprocess.TimeoutExpired:
        return f"--perf: `perf stat -e {TOTAL} -- true` did not end within 30 s"
    if out.returncode != 0 or parse_stat(out.stderr).get(TOTAL) is None:
        lines = (out.stderr or out.stdout).strip().splitlines()
        why = " ".join(line.strip() for line in lines[:3]) or f"exit status {out.returncode}"
        return (f"--perf: `perf stat -e {TOTAL} -- true` failed: {why} (run as root, or lower "
                "/proc/sys/kernel/perf_event_paranoid to -1; tracepoints also need tracefs)")
    return ""


def available(events=SYSCALLS):
    """The events of `events` that this kernel has, as `perf list` names them, in their order."""
    out = subprocess.run(["perf", "list", "syscalls:sys_enter_*", "raw_syscalls:*"], capture_output=True, text=True,
                         timeout=60, check=False).stdout
    listed = {line.split()[0] for line in out.splitlines() if "Tracepoint event" in line and line.split()}
    return [e for e in events if e in listed]


# ---------------------------------------------------------------------------------------------
# What perf prints
# ---------------------------------------------------------------------------------------------
def parse_stat(text):
    """{event: count} from `perf stat -x,` output (count,unit,event,run time,percentage,...); None for
    an event perf reports as "<not counted>" (it never ran: nothing happened) or "<not supported>"."""
    counts = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split(",")
        if len(fields) < 3 or not fields[2]:
            continue
        value = fields[0].strip()
        if re.fullmatch(r"[0-9]+", value):
            counts[fields[2]] = int(value)
        elif re.fullmatch(r"[0-9]+\.[0-9]*", value):
            counts[fields[2]] = round(float(value))
        elif value.startswith("<"):
            counts[fields[2]] = None
    return counts


def syscall_name(event):
    """"read" for syscalls:sys_enter_read, "total" for raw_syscalls:sys_enter."""
    return "total" if event == TOTAL else event.rpartition("sys_enter_")[2]


def per_request(counts, complete):
    """(system calls per request, {name: calls per request}) of perf stat's counts; a call that was
    not counted is 0 (the event was attached but never fired). (None, {}) without requests or a total."""
    if not complete or TOTAL not in counts:
        return None, {}
    by_name = {syscall_name(e): (n or 0) / complete for e, n in counts.items() if e != TOTAL}
    return (counts.get(TOTAL) or 0) / complete, by_name


_REPORT_LINE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)%\s+(.+?)\s+\[[^\]]\]\s+(.*?)\s*$")


def parse_report(text, top=TOP):
    """[(percent, dso, symbol), ...] from `perf report --stdio --sort dso,sym`, largest first, at most
    `top`. The symbol may hold spaces (a Java method's signature); the dso ends before its [k] / [.]."""
    rows = []
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = _REPORT_LINE.match(line)
        if m:
            rows.append((float(m.group(1)), m.group(2), m.group(3)))
    return sorted(rows, key=lambda r: -r[0])[:top]


def top_text(rows):
    """The profile as raw/<run>-perf-top.txt holds it: one "percent  dso  symbol" line per row."""
    width = max((len(dso) for _, dso, _ in rows), default=0)
    return "".join(f"{pct:6.2f}%  {dso:<{width}}  {sym}\n" for pct, dso, sym in rows)


# ---------------------------------------------------------------------------------------------
# During a step
# ---------------------------------------------------------------------------------------------
class _Attached:
    """One perf process attached to the server, started disabled and enabled through its control FIFO."""

    def __init__(self, what, args, fifos, log, on_cpu):
        self.what, self.log = f"perf {what}", log
        self.ctl, self.ack = Path(f"{fifos}.ctl"), Path(f"{fifos}.ack")
        for fifo in (self.ctl, self.ack):
            if fifo.exists():
                fifo.unlink()
            os.mkfifo(fifo)
        self.cmd = on_cpu(["perf", what, "-D", "-1", "--control", f"fifo:{self.ctl},{self.ack}", *args])
        self.proc = None

    def start(self):
        """Starts perf and enables its events; "" once perf acknowledged, else why not (perf stopped)."""
        with open(self.log, "a") as log:
            self.proc = subprocess.Popen(self.cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + START_S
        ctl = ack = None
        try:
            # The FIFOs open once perf opened its ends: non-blocking, so that a perf that fails first
            # does not leave the sweep waiting.
            ack = os.open(self.ack, os.O_RDONLY | os.O_NONBLOCK)
            while ctl is None:
                try:
                    ctl = os.open(self.ctl, os.O_WRONLY | os.O_NONBLOCK)
                except OSError:
                    if self.proc.poll() is not None or time.monotonic() > deadline:
                        return self._failed("did not start")
                    time.sleep(0.02)
            os.write(ctl, b"enable\n")
            got = b""
            while b"ack" not in got:
                left = deadline - time.monotonic()
                if self.proc.poll() is not None or left <= 0:
                    return self._failed("did not acknowledge 'enable'")
                if select.select([ack], [], [], min(left, 0.1))[0]:
                    try:
                        chunk = os.read(ack, 64)
                    except BlockingIOError:
                        chunk = b""
                    if not chunk:
                        # No writer yet (perf opens its end after ours): readable at end of file.
                        time.sleep(0.02)
                    got += chunk
            return ""
        finally:
            for fd in (ctl, ack):
                if fd is not None:
                    os.close(fd)

    def _failed(self, what):
        self.stop()
        return f"{self.what} {what} (log: {self.log})"

    def stop(self):
        """SIGINT, as Ctrl-C: perf writes what it has and exits. Its exit status (or None if killed)."""
        for fifo in (self.ctl, self.ack):
            if fifo.exists():
                fifo.unlink()
        if self.proc is None or self.proc.poll() is not None:
            return self.proc and self.proc.returncode
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None


class Step:
    """perf around one timed run: start() before the client, stop() after it, then results() reads
    what it recorded. Files: `base`-perf-stat.txt (counts), -perf.data (samples), -perf-top.txt (the
    profile), -perf.log (perf's own messages); `rel` is `base` relative to the results directory."""

    def __init__(self, events, pids, base, rel, on_cpu=lambda cmd: cmd):
        self.events, self.pids, self.base, self.rel = events, list(pids), str(base), rel
        self.log = Path(f"{base}-perf.log")
        targets = ",".join(map(str, self.pids))
        self.stat = _Attached("stat", ["-x,", "-o", f"{base}-perf-stat.txt", "-e", ",".join(events), "-p", targets],
                              f"{base}-perf-stat", self.log, on_cpu)
        self.record = _Attached("record", ["-F", str(SAMPLE_HZ), "--no-buildid-cache", "-q", "-o", f"{base}-perf.data",
                                           "-p", targets], f"{base}-perf-record", self.log, on_cpu)
        self.error = ""

    @property
    def commands(self):
        return [self.stat.cmd, self.record.cmd]

    def start(self):
        """Attaches both; the error text ("" when both run). A failure stops the other too."""
        self.error = self.stat.start() or self.record.start()
        if self.error:
            self.stop()
        return self.error

    def stop(self):
        self.stat.stop()
        self.record.stop()

    def results(self, java_path=None, complete=0):
        """{syscall_counts, syscalls_per_request, syscalls_per_request_by_name, perf_top, perf_top_raw,
        perf_error}: what the TimedRun record takes. java_path: the server's java, whose jcmd writes the
        JIT map first (None for nginx)."""
        out = {"syscall_counts": {}, "syscalls_per_request": None, "syscalls_per_request_by_name": {},
               "perf_top": [], "perf_top_raw": "", "perf_error": self.error}
        if self.error:
            return out
        errors = []
        try:
            counts = parse_stat(Path(f"{self.base}-perf-stat.txt").read_text())
        except OSError as e:
            counts = {}
            errors.append(f"no perf stat output: {e.strerror}")
        if counts:
            out["syscall_counts"] = {syscall_name(e): n for e, n in counts.items()}
            out["syscalls_per_request"], out["syscalls_per_request_by_name"] = per_request(counts, complete)
        elif not errors:
            errors.append(f"perf stat counted nothing (log: {self.log})")
        maps = []
        if java_path:
            error, maps = self._jit_map(java_path)
            if error:
                errors.append(error)
        rows, error = self._report()
        if error:
            errors.append(error)
        else:
            Path(f"{self.base}-perf-top.txt").write_text(top_text(rows))
            out["perf_top"] = [list(r) for r in rows[:TOP_RECORDED]]
            out["perf_top_raw"] = f"{self.rel}-perf-top.txt"
        for m in maps:
            # A copy beside the samples (perf report reads /tmp/perf-PID.map): the profile can be
            # read again later; /tmp keeps nothing.
            try:
                shutil.move(m, f"{self.base}-{m.name}")
            except OSError:
                pass
        out["perf_error"] = "; ".join(errors)
        return out

    def _jit_map(self, java_path):
        """(error text or "", the /tmp/perf-PID.map files written): jcmd Compiler.perfmap for each pid."""
        jcmd = pinning.tool(java_path, "jcmd")
        if not jcmd:
            return f"no jcmd beside {java_path}: JIT-compiled methods unnamed", []
        written, errors = [], []
        for pid in self.pids:
            try:
                out = subprocess.run([jcmd, str(pid), "Compiler.perfmap"], capture_output=True, text=True,
                                     timeout=60, check=False)
            except subprocess.TimeoutExpired:
                errors.append(f"jcmd {pid} Compiler.perfmap did not end within 60 s")
                continue
            m = Path(f"/tmp/perf-{pid}.map")
            if out.returncode == 0 and m.is_file():
                written.append(m)
            else:
                lines = (out.stdout + out.stderr).strip().splitlines()
                errors.append(f"jcmd {pid} Compiler.perfmap: {lines[-1] if lines else f'exit {out.returncode}'}")
        return "; ".join(errors), written

    def _report(self):
        """(rows of the flat profile, error text or "")."""
        data = Path(f"{self.base}-perf.data")
        if not data.is_file():
            return [], f"perf record wrote no {data.name} (log: {self.log})"
        try:
            out = subprocess.run(["perf", "report", "-i", str(data), "--stdio", "--sort", "dso,sym",
                                  "--percent-limit", str(PERCENT_LIMIT)], capture_output=True, text=True,
                                 timeout=300, check=False)
        except subprocess.TimeoutExpired:
            return [], "perf report did not end within 300 s"
        rows = parse_report(out.stdout)
        if not rows:
            lines = (out.stderr or out.stdout).strip().splitlines()
            return [], f"perf report: {lines[-1] if lines else 'no samples'}"
        return rows, ""


def text(per_request_total):
    """The progress line's part: "  syscalls/req 4.02"."""
    return f"  syscalls/req {per_request_total:.2f}" if per_request_total is not None else ""
