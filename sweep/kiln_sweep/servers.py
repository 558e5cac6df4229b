"""Starting what the sweep measures: the java for each server, the command lines, free ports, the
nginx anchor's configuration, jar builds and the readiness probe."""

import grp
import os
import pwd
import random
import re
import shutil
import socket
import subprocess
from pathlib import Path

from kiln_sweep import SweepError
from kiln_sweep.plan import port_candidates

BIND = "127.0.0.1"
# lmdbjava reaches into java.nio internals (README, "JVM flags").
LMDB_FLAGS = ["--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED"]


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

    def flags(self, heap):
        flags = [f"-Xms{heap}", f"-Xmx{heap}", "-XX:+ExitOnOutOfMemoryError", *LMDB_FLAGS]
        if self.major >= 22:
            flags.append("--enable-native-access=ALL-UNNAMED")
        if self.major >= 23:  # lmdbjava uses sun.misc.Unsafe, which JDK 23+ warns about on stderr
            flags.append("--sun-misc-unsafe-memory-access=allow")
        return flags

    def javac(self):
        """The javac beside this java, else the one on the PATH (None when there is none)."""
        beside = Path(os.path.realpath(self.path)).parent / "javac"
        return str(beside) if beside.is_file() else shutil.which("javac")


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


def command(server, java, heap, port, data_dir, dummy_classes, jvm_extra=(), args_extra=()):
    """The command line that starts `server` on BIND:port; data_dir holds a front end's database or
    nginx's configuration, logs and temp files. jvm_extra go to a JVM before the class or jar,
    args_extra after a front end's own arguments."""
    if server.kind == "jar":
        return [java.path, *java.flags(heap), *jvm_extra, "-jar", server.jar, "--port", str(port), "--bind", BIND,
                "--data", str(data_dir), *server.args, *args_extra]
    if server.kind == "dummy":
        return [java.path, *java.flags(heap), *jvm_extra, "-cp", str(dummy_classes), "DummyServer", "--port",
                str(port), "--bind", BIND]
    return ["nginx", "-p", str(data_dir), "-c", f"{data_dir}/nginx.conf", "-e", f"{data_dir}/error.log",
            "-g", "daemon off;"]


def ready_line(port):
    """The line a kiln front end (and the dummy) prints once it serves."""
    return re.compile(rf"^kiln-[a-z-]+ listening on http://{re.escape(BIND)}:{port}/$", re.MULTILINE)

