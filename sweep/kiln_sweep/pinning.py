"""Carrier pinning under the sweep: a front end that runs on virtual threads (JDK range 21+ in
frontends.conf: loom, jetty-loom) starts with a JFR recording of jdk.VirtualThreadPinned alone
(settings=none: no other event, so it costs next to nothing while nothing pins), threshold 20 ms.
After each step the sweep dumps the recording (jcmd JFR.dump) and counts the events that are new since
the previous dump, with the frames they pinned in.

On JDK 24+ (JEP 491) waiting inside `synchronized` no longer pins; what still does is a blocking call
with a native frame or a class initialiser (<clinit>) on the stack. JDK 24+ names the reason in the
event (pinnedReason, e.g. "VM call to Foo.<clinit> on stack", "Native frame or <clinit> on stack").

    -XX:StartFlightRecording:settings=none,+jdk.VirtualThreadPinned#enabled=true,...

is accepted from JDK 17 on (the +event#setting syntax); the event itself exists from JDK 21.
"""

import json
import os
import subprocess
from collections import Counter
from pathlib import Path

EVENT = "jdk.VirtualThreadPinned"
THRESHOLD_MS = 20
RECORDING = "kiln-pinned"
# The frames of a pinned event's stack that are the JDK's own parking machinery, not where it pinned.
_MACHINERY = ("java/lang/VirtualThread", "java/lang/Thread", "java/lang/ThreadBuilders", "jdk/internal/",
              "java/util/concurrent/locks/LockSupport", "sun/nio/ch/Poller")


def applies(server, java):
    """Recorded for front ends that run on virtual threads: JDK range 21+ (frontends.conf column 4),
    on a JDK that has the event."""
    return server.kind == "jar" and server.jdk == "21+" and java is not None and java.major >= 21


def jvm_flag(jfr_file):
    """The JVM option that starts the recording; the file is written again at exit (dumponexit)."""
    return ("-XX:StartFlightRecording:settings=none,"
            f"+{EVENT}#enabled=true,+{EVENT}#threshold={THRESHOLD_MS}ms,+{EVENT}#stackTrace=true,"
            f"name={RECORDING},filename={jfr_file},dumponexit=true")


def tool(java_path, name):
    """jcmd or jfr of the same JDK as the server's java (another JDK's cannot attach or read its files)."""
    beside = Path(os.path.realpath(java_path)).parent / name
    return str(beside) if beside.is_file() else None


def dump(java_path, pid, jfr_file, timeout=60):
    """Writes the recording so far to jfr_file; returns an error text, or "" when it worked."""
    jcmd = tool(java_path, "jcmd")
    if not jcmd:
        return f"no jcmd beside {java_path}"
    out = subprocess.run([jcmd, str(pid), "JFR.dump", f"name={RECORDING}", f"filename={jfr_file}"],
                         capture_output=True, text=True, timeout=timeout, check=False)
    if out.returncode != 0 or not Path(jfr_file).is_file():
        lines = (out.stdout + out.stderr).strip().splitlines()
        return lines[-1] if lines else f"jcmd exit status {out.returncode}"
    return ""


def read_events(java_path, jfr_file, timeout=120):
    """The recording's jdk.VirtualThreadPinned events as jfr print --json gives them ("values" dicts)."""
    jfr = tool(java_path, "jfr")
    if not jfr:
        raise RuntimeError(f"no jfr beside {java_path}")
    out = subprocess.run([jfr, "print", "--json", "--stack-depth", "64", "--events", EVENT, str(jfr_file)],
                         capture_output=True, text=True, timeout=timeout, check=False)
    if out.returncode != 0:
        raise RuntimeError((out.stderr or out.stdout).strip() or f"jfr print exit {out.returncode}")
    return parse_json(out.stdout)


def parse_json(text):
    return [e["values"] for e in json.loads(text)["recording"]["events"] if e.get("type") == EVENT]


def event_key(values):
    """Identifies an event across cumulative dumps."""
    thread = values.get("eventThread") or {}
    return values.get("startTime"), thread.get("javaThreadId"), values.get("duration")


def _frame_text(frame):
    m = frame.get("method") or {}
    cls = ((m.get("type") or {}).get("name") or "?").replace("/", ".")
    line = frame.get("lineNumber")
    return f"{cls}.{m.get('name', '?')}" + (f":{line}" if line is not None and line >= 0 else "")


def where(values):
    """Where an event pinned: the first frames of its stack below the JDK's parking machinery (up to 3),
    e.g. "kiln.db.Foo.bar:12 < kiln.http.spi.Connection.run:80"."""
    frames = ((values.get("stackTrace") or {}).get("frames")) or []
    own = [f for f in frames if not ((f.get("method") or {}).get("type") or {}).get("name", "").startswith(_MACHINERY)]
    picked = own[:3] or frames[:3]
    return " < ".join(_frame_text(f) for f in picked) or "(no stack)"


def _duration_ms(text):
    """ISO-8601 duration of jfr --json ("PT0.100127512S", "PT1M2.5S") in ms."""
    if not text or not text.startswith("PT"):
        return None
    total, num = 0.0, ""
    for ch in text[2:]:
        if ch.isdigit() or ch == ".":
            num += ch
        else:
            total += float(num or 0) * {"H": 3600, "M": 60, "S": 1}.get(ch, 0)
            num = ""
    return total * 1000


def summarize(events, top=3):
    """{events, max_ms, top: [[count, reason, where], ...] most frequent first} of a list of events."""
    places = Counter((e.get("pinnedReason") or "", where(e)) for e in events)
    durations = [d for d in (_duration_ms(e.get("duration")) for e in events) if d is not None]
    return {"events": len(events), "max_ms": round(max(durations), 1) if durations else None,
            "top": [[n, reason, w] for (reason, w), n in places.most_common(top)]}


class Recorder:
    """The recording of one server run: after each step, new_events() dumps it and returns the events
    not seen in an earlier dump."""

    def __init__(self, java_path, pid, jfr_path):
        self.java_path, self.pid, self.jfr_path = java_path, pid, Path(jfr_path)
        self.seen = set()

    def new_events(self, step_file):
        """(events new since the last call, error text or "")."""
        error = dump(self.java_path, self.pid, step_file)
        if error:
            return [], f"JFR.dump failed: {error}"
        try:
            events = read_events(self.java_path, step_file)
        except (RuntimeError, subprocess.TimeoutExpired, ValueError, KeyError) as e:
            return [], f"jfr print failed: {e}"
        new = [e for e in events if event_key(e) not in self.seen]
        self.seen |= {event_key(e) for e in new}
        return new, ""


def text(summary, threshold_ms=THRESHOLD_MS):
    """One line: "0 events >= 20 ms" or "3 events >= 20 ms (max 112 ms): 2x reason at frames; ..."."""
    n = summary["events"]
    line = f"{n} event{'s' if n != 1 else ''} >= {threshold_ms} ms"
    if n:
        line += f" (max {summary['max_ms']} ms): " + "; ".join(
            f"{count}x {reason + ' at ' if reason else ''}{w}" for count, reason, w in summary["top"])
    return line
