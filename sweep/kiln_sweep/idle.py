"""--memory: what one idle keep-alive connection costs a server. The pieces: a client that holds N
connections open, each after one completed request (non-blocking sockets and a selector, bounded in
time), and the JVM's class histogram (jcmd GC.class_histogram: a full GC first, so it counts live
objects only), parsed and diffed."""

import errno
import os
import re
import selectors
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

# At most this many connects in flight at once: below every front end's listen backlog (Kilim's 1000),
# so that none is dropped and retried by the kernel's SYN timer (1 s, 3 s, ...).
IN_FLIGHT = 500


# ---------------------------------------------------------------------------------------------
# The class histogram
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Histogram:
    """{class name: (instances, bytes)} and the totals of jcmd's "Total" line."""
    classes: dict
    instances: int
    bytes: int


_ROW = re.compile(r"^\s*\d+:\s+(\d+)\s+(\d+)\s+(\S+)(?:\s+\(.*\))?\s*$")
_TOTAL = re.compile(r"^Total\s+(\d+)\s+(\d+)\s*$")


def parse_histogram(text):
    """jcmd PID GC.class_histogram's output (JDK 17 and 25 print the same table: "num #instances
    #bytes class name (module)", then "Total INSTANCES BYTES"). A class can appear twice when two
    loaders define it: their rows are added. Raises ValueError when there is no Total line."""
    classes, total = {}, None
    for line in text.splitlines():
        m = _ROW.match(line)
        if m:
            n, b = classes.get(m.group(3), (0, 0))
            classes[m.group(3)] = (n + int(m.group(1)), b + int(m.group(2)))
            continue
        m = _TOTAL.match(line)
        if m:
            total = (int(m.group(1)), int(m.group(2)))
    if total is None:
        raise ValueError("not a class histogram (no 'Total' line): " + (text.strip().splitlines() or ["(empty)"])[-1])
    return Histogram(classes, *total)


def readable_class(name):
    """JVM descriptors as Java reads them: [B -> byte[], [Ljava.lang.Object; -> java.lang.Object[]."""
    dims = len(name) - len(name.lstrip("["))
    if not dims:
        return name
    base = name[dims:]
    prim = {"B": "byte", "C": "char", "D": "double", "F": "float", "I": "int", "J": "long", "S": "short", "Z": "boolean"}
    base = base[1:-1] if base.startswith("L") and base.endswith(";") else prim.get(base, base)
    return base + "[]" * dims


def diff(before, after, connections, top=5):
    """(heap bytes per connection, [(class, instances per connection, bytes per connection)] of the
    `top` classes that grew most in bytes)."""
    rows = []
    for name in set(before.classes) | set(after.classes):
        n0, b0 = before.classes.get(name, (0, 0))
        n1, b1 = after.classes.get(name, (0, 0))
        if b1 != b0:
            rows.append((readable_class(name), (n1 - n0) / connections, (b1 - b0) / connections))
    rows.sort(key=lambda r: (-r[2], r[0]))
    return (after.bytes - before.bytes) / connections, rows[:top]


def class_histogram(jcmd, pid, out_file, timeout=120):
    """Runs jcmd PID GC.class_histogram into out_file; returns the parsed Histogram."""
    done = subprocess.run([jcmd, str(pid), "GC.class_histogram"], capture_output=True, text=True, timeout=timeout,
                          check=False)
    Path(out_file).write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise ValueError(f"jcmd {pid} GC.class_histogram failed (exit {done.returncode}): "
                         + ((done.stdout + done.stderr).strip().splitlines() or [""])[-1])
    return parse_histogram(done.stdout)


# ---------------------------------------------------------------------------------------------
# The idle connections
# ---------------------------------------------------------------------------------------------
class IdleConnections:
    """N connections to host:port, each of which sent `GET path HTTP/1.1` and read its whole response
    (Content-Length framed), then stays open and silent. open() returns once all are idle, or failed,
    or the time limit passed; close() closes them all."""

    def __init__(self, host, port, path="/hello"):
        self.addr = (host, port)
        self.request = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()
        self.idle = []
        self.errors = {}

    def _error(self, what):
        self.errors[what] = self.errors.get(what, 0) + 1

    def open(self, n, time_limit_s):
        sel = selectors.DefaultSelector()
        state = {}                 # socket -> [phase, bytes still to send, bytes read]
        started, deadline = 0, time.monotonic() + time_limit_s

        def drop(s, what):
            self._error(what)
            sel.unregister(s)
            del state[s]
            s.close()

        try:
            while (started < n or state) and time.monotonic() < deadline:
                while started < n and len(state) < IN_FLIGHT:
                    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    s.setblocking(False)
                    started += 1
                    rc = s.connect_ex(self.addr)
                    if rc not in (0, errno.EINPROGRESS):
                        self._error(f"connect: {os.strerror(rc)}")
                        s.close()
                        continue
                    state[s] = ["connect", self.request, b""]
                    sel.register(s, selectors.EVENT_WRITE)
                for key, _ in sel.select(timeout=0.5):
                    s = key.fileobj
                    st = state[s]
                    if st[0] == "connect":
                        rc = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                        if rc:
                            drop(s, f"connect: {os.strerror(rc)}")
                            continue
                        st[0] = "send"
                    if st[0] == "send":
                        try:
                            st[1] = st[1][s.send(st[1]):]
                        except OSError as e:
                            drop(s, f"send: {e.strerror}")
                            continue
                        if not st[1]:
                            st[0] = "read"
                            sel.modify(s, selectors.EVENT_READ)
                        continue
                    try:
                        chunk = s.recv(65536)
                    except OSError as e:
                        drop(s, f"receive: {e.strerror}")
                        continue
                    if not chunk:
                        drop(s, "closed by the server before its response ended")
                        continue
                    st[2] += chunk
                    status = response_complete(st[2])
                    if status is None:
                        continue
                    sel.unregister(s)
                    del state[s]
                    if status.startswith("2"):
                        self.idle.append(s)
                    else:
                        self._error(f"status {status}")
                        s.close()
        finally:
            for s in list(state):
                self._error(f"not answered within {time_limit_s} s")
                sel.unregister(s)
                s.close()
            sel.close()
        return len(self.idle)

    def still_open(self):
        """How many idle connections the server has not closed: an idle socket that turns readable got
        EOF, a reset or unexpected bytes."""
        sel = selectors.DefaultSelector()
        for s in self.idle:
            sel.register(s, selectors.EVENT_READ)
        ready = len(sel.select(timeout=0))
        sel.close()
        return len(self.idle) - ready

    def close(self):
        for s in self.idle:
            s.close()
        self.idle = []

    def error_text(self):
        return ", ".join(f"{n} {what}" for what, n in sorted(self.errors.items(), key=lambda kv: -kv[1]))


def response_complete(data):
    """The status code once `data` holds a whole response (head and Content-Length body), else None."""
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return None
    lines = head.decode("latin-1").split("\r\n")
    m = re.match(r"HTTP/1\.[01] (\d{3})", lines[0])
    length = 0
    for line in lines[1:]:
        k, _, v = line.partition(":")
        if k.strip().lower() == "content-length":
            length = int(v.strip())
    if len(body) < length:
        return None
    return m.group(1) if m else "???"


def established(port):
    """The number of established TCP connections whose local port is `port` (the server's side)."""
    out = subprocess.run(["ss", "-Htn", "state", "established", f"sport = :{port}"], capture_output=True, text=True,
                         check=False).stdout
    return sum(1 for line in out.splitlines() if line.strip())
