"""Carrier pinning: the JFR recording's JVM option, reading jdk.VirtualThreadPinned events (a recording
captured from JDK 25 in testdata/, and a live JVM that pins once on purpose), and which servers get it."""

import subprocess

import pytest

from conftest import DATA, ROOT, ab_sweep
from kiln_sweep import pinning, registry, servers

CAPTURED = DATA / "jfr-pinned-clinit.json"


def jdk21():
    """A JDK 21+ java with jcmd and jfr beside it, or None."""
    try:
        path = servers.find_java(ROOT, "21+")
    except Exception:
        return None
    return path if pinning.tool(path, "jcmd") and pinning.tool(path, "jfr") else None


def test_captured_event_is_summarised_with_its_reason_and_frames():
    events = pinning.parse_json(CAPTURED.read_text())
    s = pinning.summarize(events)
    assert s["events"] == 1 and s["max_ms"] == pytest.approx(100.1)
    [[count, reason, where]] = s["top"]
    assert count == 1 and reason == "VM call to Slow.<clinit> on stack"
    # The JDK's own parking frames are skipped: the first frame is where it pinned.
    assert where.startswith("Slow.<clinit>:12 < Pin.lambda$main$0:6")
    assert pinning.text(s).startswith("1 event >= 20 ms (max 100.1 ms): 1x VM call to Slow.<clinit> on stack at Slow")
    assert pinning.text(pinning.summarize([])) == "0 events >= 20 ms"


@pytest.mark.parametrize("text, ms", [("PT0.100127512S", 100.127512), ("PT1M2.5S", 62500.0), ("PT0S", 0.0),
                                      (None, None), ("", None)])
def test_durations(text, ms):
    assert pinning._duration_ms(text) == (pytest.approx(ms) if ms is not None else None)


def test_only_the_virtual_thread_front_ends_are_recorded():
    known = registry.known(ROOT)

    class J:
        def __init__(self, major):
            self.major = major

    applies = {name for name, s in known.items() if pinning.applies(s, J(25))}
    conf = {line.split()[0] for line in (ROOT / "frontends.conf").read_text().splitlines()
            if line.strip() and not line.startswith("#") and line.split()[3] == "21+"}
    assert applies == conf and {"loom", "jetty-loom"} <= applies
    assert not pinning.applies(known["loom"], J(17)), "no such event before JDK 21"


def test_plan_says_which_servers_are_recorded_and_no_jfr_turns_it_off():
    if not jdk21():
        pytest.skip("no JDK 21+ with jcmd and jfr on this machine")
    out = ab_sweep("--plan-only", "--quick", "kilim", "loom", "jetty-loom").stdout
    assert "Pinning:     JFR jdk.VirtualThreadPinned >= 20 ms for loom, jetty-loom (--no-jfr: off)" in out
    assert "Pinning:" not in ab_sweep("--plan-only", "--quick", "--no-jfr", "loom").stdout


def test_a_live_jvm_that_pins_once_is_counted_once(tmp_path):
    java = jdk21()
    if not java:
        pytest.skip("no JDK 21+ with jcmd and jfr on this machine")
    final = tmp_path / "final.jfr"
    # The exact option the sweep gives the server: the JVM must accept it.
    proc = subprocess.Popen([java, pinning.jvm_flag(final), str(DATA / "PinnedOnce.java")], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if line.strip() == "pinned":
                break
        assert lines and lines[-1].strip() == "pinned", "".join(lines)
        rec = pinning.Recorder(java, proc.pid, final)
        events, error = rec.new_events(tmp_path / "step1.jfr")
        assert error == "" and len(events) == 1, (error, events)
        [[count, reason, where]] = pinning.summarize(events)["top"]
        assert "SlowInit.<clinit>" in where and "PinnedOnce" in where
        # The next dump holds the same event again; it is not counted twice.
        assert rec.new_events(tmp_path / "step2.jfr") == ([], "")
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()
    # dumponexit: the whole recording is written when the JVM exits.
    assert final.is_file() and final.stat().st_size > 0


def test_a_dump_of_a_process_that_is_gone_says_so(tmp_path):
    java = jdk21()
    if not java:
        pytest.skip("no JDK 21+ with jcmd and jfr on this machine")
    gone = subprocess.Popen(["true"])
    gone.wait()
    events, error = pinning.Recorder(java, gone.pid, tmp_path / "x.jfr").new_events(tmp_path / "step.jfr")
    assert events == [] and error.startswith("JFR.dump failed: ") and len(error) > len("JFR.dump failed: ")
