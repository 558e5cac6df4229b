"""--subscribers, the fan-out benchmark: the subscribers' event parsing, the merge of their results, the
client processes (sweep/FanoutClient.java, the default, and kiln_sweep.subscribers) against a fake event
server (tests/fake_sse.py) and against scripted byte streams cut at every kind of place, one whole fan-out
step and its report with the fake server in place of a front end, and the command line."""

import csv
import json
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import ROOT, SWEEP, VENV_PY, ab_sweep
from kiln_sweep import charts, fanout, plan, records, report, servers, subscribers
from kiln_sweep.registry import Server

FAKE = SWEEP / "tests" / "fake_sse.py"


def event(seq, committed, kind="update"):
    return (f'id: {seq}\nevent: {kind}\ndata: {{"seq":{seq},"committedAt":{committed},'
            f'"worlds":[{{"id":17,"randomNumber":4242}}]}}\n\n').encode()


# ---------------------------------------------------------------------------------------------
# Parsing events
# ---------------------------------------------------------------------------------------------
def test_events_give_latency_buckets_ids_and_leave_the_incomplete_rest():
    st, ids = subscribers.Stats(1), [0, 0, 0, 0]
    data = b": hello\nretry: 2000\n\n" + event(7, 1_000_000) + event(8, 1_000_450) + event(9, 1_000_900)[:30]
    rest = subscribers.parse_events(data, st, 1_001_000, ids)
    assert rest == event(9, 1_000_900)[:30]
    assert st.received == 2 and ids == [7, 8, 2, 0]
    # 1000 us -> bucket 10 (1.0-1.1 ms), 550 us -> bucket 5
    assert st.hist[10] == 1 and st.hist[5] == 1 and st.max_us == 1000
    rest = subscribers.parse_events(rest + event(9, 1_000_900)[30:], st, 1_001_000, ids)
    assert rest == b"" and st.received == 3 and ids == [7, 9, 3, 0] and st.hist[1] == 1


def test_gaps_duplicates_reloads_comments_and_malformed_events_are_counted():
    st, ids = subscribers.Stats(1), [0, 0, 0, 0]
    data = (event(1, 10) + b": keep-alive\n\n" + event(4, 10) + event(4, 10) + event(3, 10)
            + event(5, 10, "reload") + b"event: reload\ndata: {}\n\n" + b"id: 6\nevent: update\ndata: {}\n\n"
            + event(7, 20))
    subscribers.parse_events(data, st, 100, ids)
    assert ids == [1, 7, 3, 4], "first, last, events, ids skipped (2, 3 before 4; 5, 6 after it)"
    assert st.received == 3 and st.duplicates == 2 and sum(st.hist) == 3
    assert st.reloads == 2 and st.malformed == 1 and st.other_events == 0


def test_a_restart_drops_what_was_counted_and_the_warm_up_events_still_coming():
    st = subscribers.Stats(1)
    ids = [0, 0, 0, 0]
    st.streams.append(ids)
    subscribers.parse_events(event(1, 0) + event(3, 0), st, 100, ids)
    assert (st.received, ids, st.first_id(), st.last_id()) == (2, [1, 3, 2, 1], 1, 3)
    st.restart(4)
    assert (st.received, sum(st.hist), ids, st.first_id()) == (0, 0, [0, 0, 0, 0], None)
    subscribers.parse_events(event(4, 0) + event(5, 0) + event(7, 0), st, 100, ids)
    assert st.received == 2 and ids == [5, 7, 2, 1] and st.first_id() == 5


def test_a_receipt_before_committed_at_counts_as_zero_and_slow_events_land_in_the_last_bucket():
    st, ids = subscribers.Stats(1), [0, 0, 0, 0]
    subscribers.parse_events(event(1, 5000) + event(2, 0), st, 1000 + subscribers.BUCKETS * subscribers.BUCKET_US * 2,
                             ids)
    subscribers.parse_events(event(3, 10_000), st, 9_000, ids)
    assert st.negative == 1 and st.hist[0] == 1
    assert st.hist[-1] == 2 and st.max_us == 1000 + subscribers.BUCKETS * subscribers.BUCKET_US * 2


# ---------------------------------------------------------------------------------------------
# Merging what the processes saw
# ---------------------------------------------------------------------------------------------
def result(**kw):
    r = subscribers.Stats(0).result()
    r.update(cpu_user_s=0.0, cpu_sys_s=0.0)
    r.update(kw)
    return r


def test_merge_adds_counts_and_histograms_and_keeps_the_extremes():
    a = result(subscribers=3, held=3, received=30, hist={"0": 10, "5": 20}, max_us=600, gaps=2, with_events=3,
               first_id_min=1, first_id_max=2, first_id_sum=4, last_id_min=10, last_id_max=10, last_id_sum=30,
               connect_errors={}, end_errors={"end of stream": 1}, ended=1)
    b = result(subscribers=2, held=1, received=10, hist={"5": 5, "99": 5}, max_us=9950, with_events=1,
               first_id_min=1, first_id_max=1, first_id_sum=1, last_id_min=9, last_id_max=9, last_id_sum=9,
               connect_errors={"status 503": 1})
    m = fanout.merge([a, b])
    assert m["held"] == 4 and m["received"] == 40 and m["gaps"] == 2 and m["ended"] == 1
    assert m["hist"] == {"0": 10, "5": 25, "99": 5} and m["max_us"] == 9950
    assert m["connect_errors"] == {"status 503": 1} and m["end_errors"] == {"end of stream": 1}
    # First ids 1, 2, 1 and last ids 10, 10, 10, 9: one event missed before a first one, one after a last.
    assert fanout.missed_ends(m) == (4 + 1 - 1 * 4, 10 * 4 - 39)


def test_percentiles_come_from_the_histogram_at_the_bucket_upper_edge():
    hist = {"0": 50, "9": 49, "1234": 1}
    assert fanout.percentile_ms(hist, 100, 0.5) == pytest.approx(0.1)
    assert fanout.percentile_ms(hist, 100, 0.99) == pytest.approx(1.0)
    assert fanout.percentile_ms(hist, 100, 1.0) == pytest.approx(123.5)
    assert fanout.percentile_ms({}, 100, 0.5) is None


def test_the_publisher_keeps_its_rate_while_commits_are_slow(fake_server):
    fake = fake_server("--delay-ms", "300")
    start = time.monotonic()
    pub = fanout.publish(fake.port, 20, 1.5)
    assert pub["commits"] == pub["sent"] == 30 and pub["late"] == 0, pub
    assert time.monotonic() - start < 2.5, "open loop: 300 ms commits do not slow a 20/s schedule"
    assert 300 <= pub["answer_ms_p50"] < 600 and pub["answer_ms_max"] >= pub["answer_ms_p99"]


def test_subscribers_are_split_evenly_over_the_processes():
    assert fanout.split(19500, 2) == [9750, 9750]
    assert fanout.split(1001, 3) == [334, 334, 333]
    assert fanout.split(1, 4) == [1]


# ---------------------------------------------------------------------------------------------
# Against the fake event server
# ---------------------------------------------------------------------------------------------
class Fake:
    """tests/fake_sse.py in a process of its own, on a free port."""

    def __init__(self, *args):
        self.proc = subprocess.Popen([sys.executable, str(FAKE), *args], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        self.port = int(re.search(r":(\d+)/$", line.strip()).group(1))

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture
def fake_server(request):
    servers_made = []

    def make(*args):
        f = Fake(*args)
        servers_made.append(f)
        return f
    yield make
    for f in servers_made:
        f.stop()


needs_venv = pytest.mark.skipif(not VENV_PY.is_file(), reason="no sweep/.venv (./ab-sweep.sh --setup)")
# Each client kind: the Java one always (javac is a prerequisite of the sweep), the Python one with the venv.
KINDS = ["java", pytest.param("python", marks=needs_venv)]


@pytest.fixture(scope="session")
def java_client(tmp_path_factory):
    """sweep/FanoutClient.java compiled as the sweep compiles it (fanout.JavaClient)."""
    java = servers.Java(servers.find_java(ROOT, "17+"))
    return fanout.JavaClient.compile(java, tmp_path_factory.mktemp("fanout-client"))


@pytest.fixture
def client_of(java_client):
    """The client object of a kind: fanout.JavaClient or fanout.PythonClient."""
    return lambda kind: java_client if kind == "java" else fanout.PythonClient(VENV_PY)


def client_process(client, port, count, result, *extra, **popen):
    """One client process of `client` holding `count` subscribers of the fake on `port`."""
    return subprocess.Popen(client.command(["--port", str(port), "--count", str(count), "--result", str(result),
                                            *extra]), env=client.env, text=True, **popen)


def test_the_java_client_compiles_without_warnings(tmp_path):
    java = servers.Java(servers.find_java(ROOT, "17+"))
    done = subprocess.run([java.javac(), "-Xlint:all", "-Werror", "-d", str(tmp_path), str(fanout.JAVA_CLIENT_SOURCE)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("args, commits, received, check", [
    ((), 20, 20 * 150, lambda r: r["gaps"] == 0 and r["reloads"] == 0 and r["ended"] == 0),
    (("--skip-every", "5"), 20, 16 * 150, lambda r: r["gaps"] == 3 * 150 and r["subscribers_with_gaps"] == 150),
    (("--reload-at", "10"), 20, 19 * 150, lambda r: r["reloads"] == 150 and r["gaps"] == 150),
    (("--end-after", "10"), 20, 75 * 20 + 75 * 10, lambda r: r["ended"] == 75 and r["end_errors"] == {"end of stream": 75}
     and r["per_subscriber_min"] == 10 and r["per_subscriber_max"] == 20),
])
def test_a_client_process_holds_its_subscribers_and_counts_what_the_server_did(fake_server, client_of, tmp_path, kind,
                                                                                args, commits, received, check):
    fake = fake_server(*args)
    out = tmp_path / "client.json"
    proc = client_process(client_of(kind), fake.port, 150, out, "--deadline", "60", "--connect-timeout", "20",
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    connected = json.loads(proc.stdout.readline())
    assert connected == {"event": "connected", "held": 150, "connect_errors": {}}
    pub = fanout.publish(fake.port, 50, commits / 50)
    assert pub["commits"] == commits and pub["failures"] == {}
    # Until every event the fake sent has arrived (the counts below say what is missing if it never does).
    progress(proc, lambda p: p["received"] >= received)
    proc.stdin.write("stop\n")
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    r = json.loads(out.read_text())
    assert r["held"] == 150 and r["with_events"] == 150 and r["malformed"] == 0 and r["negative"] == 0
    assert r["received"] == received and sum(r["hist"].values()) == r["received"] and r["duplicates"] == 0
    assert check(r), {k: v for k, v in r.items() if k != "hist"}


def progress(proc, done, timeout_s=30):
    """Reads the client's progress lines until one satisfies `done` (True) or timeout_s passes (False)."""
    result = []

    def read():
        for line in proc.stdout:
            msg = json.loads(line)
            if msg.get("event") == "progress" and done(msg):
                result.append(msg)
                return
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout_s)
    return bool(result)


@pytest.mark.parametrize("kind", KINDS)
def test_a_client_reports_what_it_could_not_connect_and_stops_at_its_deadline(client_of, tmp_path, kind):
    with subprocess.Popen([sys.executable, "-c", "import socket,time; s=socket.socket(); s.bind(('127.0.0.1',0)); "
                           "print(s.getsockname()[1], flush=True); time.sleep(30)"], stdout=subprocess.PIPE,
                          text=True) as bound:
        port = bound.stdout.readline().strip()      # bound, not listening: refused
        out = tmp_path / "client.json"
        client = client_of(kind)
        done = subprocess.run(client.command(["--port", port, "--count", "5", "--result", str(out), "--deadline", "2",
                                              "--no-stdin"]), capture_output=True, text=True, timeout=30,
                              env=client.env)
        bound.kill()
    assert done.returncode == 0, done.stderr
    r = json.loads(out.read_text())
    assert r["held"] == 0 and sum(r["connect_errors"].values()) == 5
    assert all("Connect" in what or "refused" in what for what in r["connect_errors"]), r["connect_errors"]


# ---------------------------------------------------------------------------------------------
# Scripted byte streams: events cut anywhere, gaps, duplicates, reloads, streams the server ends
# ---------------------------------------------------------------------------------------------
def scripted_events():
    """One stream's payload: 5 updates counted (ids 1, 2, 4, 7, 8: 3 ids skipped), 2 duplicates (4 again, 3),
    2 reloads (one with an id), 1 event of another type, 1 update without a committedAt, comments."""
    now = time.time_ns() // 1000
    return (b": hello\nretry: 2000\n\n" + event(1, now) + event(2, now) + event(4, now) + event(4, now) + event(3, now)
            + event(5, now, "reload") + b"event: reload\ndata: {}\n\n" + b"event: other\ndata: x\n\n"
            + b"id: 6\nevent: update\ndata: {}\n\n" + event(7, now) + b": keep-alive\n\n" + event(8, now))


def cycle(sizes):
    while True:
        yield from sizes


def chunked(payload, sizes, extension=b""):
    """`payload` in the chunked transfer coding, cut into chunks of the given sizes (cycled)."""
    out, i, cut = [], 0, cycle(sizes)
    while i < len(payload):
        n = next(cut)
        part = payload[i:i + n]
        out.append(b"%x%s\r\n%s\r\n" % (len(part), extension, part))
        i += n
    return b"".join(out)


class Scripted:
    """A server on a free port that answers every request with `head` and then `body`, sent in pieces of the
    given sizes (cycled, TCP_NODELAY, a short pause between pieces so that the client's reads end anywhere:
    inside a chunk-size line, between an event's two newlines...); then closes the connection if `close`, else
    keeps it open until stop()."""

    def __init__(self, head, body, pieces=(1, 2, 3, 5, 7, 11, 64), close=False):
        self.head, self.body, self.pieces, self.close = head, body, pieces, close
        self.sock = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self.answer, args=(conn,), daemon=True).start()

    def answer(self, conn):
        try:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            request = b""
            while b"\r\n\r\n" not in request:
                data = conn.recv(4096)
                if not data:
                    return
                request += data
            conn.sendall(self.head)
            i, cut = 0, cycle(self.pieces)
            while i < len(self.body):
                n = next(cut)
                conn.sendall(self.body[i:i + n])
                i += n
                time.sleep(0.0005)
            if self.close:
                conn.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def stop(self):
        self.sock.close()
        for c in self.conns:
            c.close()


SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"
N_SCRIPTED = 20


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("framing, ended", [
    ("chunks cut small, sent in pieces", 0),
    ("one chunk per piece of 13 bytes, with an extension", 0),
    ("one chunk, then the last chunk", N_SCRIPTED),
    ("no chunking, closed after the events", N_SCRIPTED),
])
def test_events_cut_anywhere_are_counted_once_with_their_gaps_duplicates_and_reloads(client_of, tmp_path, kind,
                                                                                      framing, ended):
    payload = scripted_events()
    if framing.startswith("chunks cut small"):
        server = Scripted(SSE_HEAD + b"Transfer-Encoding: chunked\r\n\r\n", chunked(payload, (1, 3, 17, 2, 40, 5)))
    elif framing.startswith("one chunk per piece"):
        server = Scripted(SSE_HEAD + b"Transfer-Encoding: chunked\r\n\r\n",
                          chunked(payload, (13,), b";kiln=test"), pieces=(4096,))
    elif framing.startswith("one chunk"):
        server = Scripted(SSE_HEAD + b"Transfer-Encoding: chunked\r\n\r\n", chunked(payload, (len(payload),))
                          + b"0\r\n\r\n", pieces=(4096,))
    else:
        server = Scripted(SSE_HEAD + b"\r\n", payload, close=True)
    out = tmp_path / "client.json"
    try:
        proc = client_process(client_of(kind), server.port, N_SCRIPTED, out, "--deadline", "60", "--connect-timeout",
                              "20", stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert json.loads(proc.stdout.readline()) == {"event": "connected", "held": N_SCRIPTED, "connect_errors": {}}
        progress(proc, lambda p: p["received"] >= 5 * N_SCRIPTED and p["ended"] >= ended)
        proc.stdin.write("stop\n")
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        server.stop()
    r = json.loads(out.read_text())
    n = N_SCRIPTED
    counts = {k: r[k] for k in ("held", "received", "gaps", "subscribers_with_gaps", "duplicates", "reloads",
                                "other_events", "malformed", "ended", "end_errors", "with_events", "per_subscriber_min",
                                "per_subscriber_max", "first_id_min", "last_id_max", "negative")}
    assert counts == {"held": n, "received": 5 * n, "gaps": 3 * n, "subscribers_with_gaps": n, "duplicates": 2 * n,
                      "reloads": 2 * n, "other_events": n, "malformed": n, "ended": ended,
                      "end_errors": {"end of stream": ended} if ended else {}, "with_events": n,
                      "per_subscriber_min": 5, "per_subscriber_max": 5, "first_id_min": 1, "last_id_max": 8,
                      "negative": 0}
    assert sum(r["hist"].values()) == 5 * n and r["max_us"] is not None
    assert r["first_id_sum"] == n and r["last_id_sum"] == 8 * n


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("head, error", [
    (b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n", "status 503"),
    (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok",
     "Content-Type 'text/plain', not text/event-stream"),
])
def test_a_refused_stream_is_a_connect_error_not_a_subscriber(client_of, tmp_path, kind, head, error):
    server = Scripted(head, b"")
    out = tmp_path / "client.json"
    try:
        client = client_of(kind)
        done = subprocess.run(client.command(["--port", str(server.port), "--count", "4", "--result", str(out),
                                              "--connect-timeout", "20"]), input="stop\n", capture_output=True,
                              text=True, timeout=60, env=client.env)
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[0]) == {"event": "connected", "held": 0, "connect_errors": {error: 4}}
    r = json.loads(out.read_text())
    assert r["held"] == 0 and r["connect_errors"] == {error: 4} and r["per_subscriber_min"] is None


# ---------------------------------------------------------------------------------------------
# One whole fan-out run, with the fake server standing in for a front end
# ---------------------------------------------------------------------------------------------
class FakeServers:
    """servers.Servers' interface over tests/fake_sse.py: start, wait_idle, stop."""

    def __init__(self, out, args=()):
        self.out, self.args, self.running = out, args, None

    def start(self, server, rnd):
        log = self.out / "logs" / f"r{rnd}-{server.name}.log"
        with open(log, "w") as f:
            proc = subprocess.Popen([sys.executable, str(FAKE), *self.args], stdout=f, stderr=subprocess.STDOUT)
        for _ in range(100):
            m = re.search(r":(\d+)/$", log.read_text().strip())
            if m:
                break
            time.sleep(0.1)
        self.running = servers.Running(server, proc, int(m.group(1)), log)
        return self.running

    def wait_idle(self):
        return 0.0, True

    def stop(self, quiet=False):
        r, self.running = self.running, None
        r.proc.terminate()
        r.proc.wait(timeout=10)


def fake_plan(steps, duration=2, rate=20, processes=2):
    return SimpleNamespace(steps=[plan.Step(n, n) for n in steps], rate=rate, duration=duration, rounds=1,
                           client_processes=processes, javas={}, timing=SimpleNamespace(cooldown_s=0),
                           on_client_cpu=lambda cmd: cmd)


def fake_settings(out, servers_=("kilim",)):
    records.write_settings(out, records.Settings(
        date="2026-11-25T06:00:00+00:00", mode="fanout", quick=False, servers=list(servers_), anchors=False,
        path=fanout.SSE_PATH, client="subscribers", rounds=1, duration_s=2, steps_requested=[100, 300], heap="256m",
        pinning="not pinned", nofile_soft_start="20000", nofile_soft="20000", nofile_hard="20000", clk_tck=100,
        idle_threshold_pct=5, after_window_s=0, requests_per_connection_min=0, fanout_rate=20, fanout_processes=2))


@pytest.fixture
def results(tmp_path):
    out = tmp_path / "results"
    (out / "raw").mkdir(parents=True)
    (out / "logs").mkdir()
    return out


@needs_venv
@pytest.mark.parametrize("kind", ["java", "python"])
def test_a_fanout_run_measures_every_step_and_reports_it(results, capsys, client_of, kind):
    fake_settings(results)
    f = fanout.Fanout(fake_plan([100, 300]), FakeServers(results), results, client_of(kind))
    f.measure(1, Server("kilim", "jar"))
    runs = records.read(results, records.FANOUT, records.FanoutRun)
    assert [(r.subscribers, r.held, r.client_processes) for r in runs] == [(100, 100, 2), (300, 300, 2)]
    for r in runs:
        assert not r.error and not r.client_errors, r
        assert r.client == kind and r.client_cpu_ticks >= 0
        assert r.sent == r.commits == 40 and r.expected == 40 * r.held
        assert r.received == r.expected and r.gaps == r.ended == r.reloads == 0, r
        assert r.warmup_commits == 40 and r.warmup_last_id == 40, "2 s of warm-up at 20/s"
        assert r.first_id == 41 and r.last_id == 80 and r.missed_after_last == 0
        assert r.p50_ms is not None and r.p50_ms <= r.p99_ms <= r.max_ms + 0.1
        assert r.established == r.held and r.server_alive and r.server_cpu_ticks > 0
        assert r.heap_before_bytes is None, "not a JVM: no heap figure"
        assert (results / r.latency_histogram).is_file()
    progress = capsys.readouterr().out
    assert re.search(r"kilim\s+300 subscribers: held 300 .* commits 40 .* deliveries 12,000/12,000", progress), \
        progress
    # The report, charts and all, as python -m kiln_sweep.charts writes it.
    assert charts.write(results, charts.draw_sweep, charts.draw_memory, charts.draw_fanout) == 0
    table = capsys.readouterr().out
    assert re.search(r"kilim\s+300\s+300\s+-\s+[-\d,]+\s+40\s+[\d,]+\s+100\.0\s.*\s[\d.]+$", table, re.MULTILINE), \
        table
    assert "19500 here" in table and "every delivery" in table
    rows = list(csv.DictReader(open(results / "fanout.csv")))
    assert [(r["subscribers"], r["received"], r["lost"]) for r in rows] == [("100", "4000", "0"), ("300", "12000", "0")]
    assert all(r["client"] == kind and r["client_cpu_share"] != "" for r in rows)
    assert "client/server CPU" in table
    doc = json.loads((results / "fanout.json").read_text())
    assert doc["settings"]["mode"] == "fanout" and len(doc["fanout"]) == 2
    html = (results / "report.html").read_text()
    assert "chart-p99_ms" in html and "chart-cpu_us_per_delivery" in html and 'id="fanout"' in html
    assert (results / "fanout.png").stat().st_size > 10000


def test_a_server_without_an_event_stream_is_a_step_with_an_error(results, java_client):
    class NoStream(FakeServers):
        def start(self, server, rnd):
            r = super().start(server, rnd)
            r.port = self.other.port           # answers /healthz, 404 on /updates/events
            return r
    fake_settings(results)
    other = subprocess.Popen([sys.executable, "-c", NOT_SSE], stdout=subprocess.PIPE, text=True)
    try:
        s = NoStream(results)
        s.other = SimpleNamespace(port=int(other.stdout.readline()))
        fanout.Fanout(fake_plan([10]), s, results, java_client).measure(1, Server("kilim", "jar"))
    finally:
        other.kill()
        other.wait()
    [run] = records.read(results, records.FANOUT, records.FanoutRun)
    assert "answered 404" in run.error and "no event stream" in run.error and run.held == 0


NOT_SSE = """
import http.server, threading
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/healthz" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"""


def test_problems_in_a_run_become_notes():
    run = records.FanoutRun(round=1, server="loom", requested=20000, subscribers=19500,
                            cap_reason="open-files limit 20000", client_processes=2, rate=10, duration_s=30, held=19400,
                            connect_errors="100 status 503", commits=300, sent=300, expected=300 * 19400,
                            received=300 * 19400 - 5000, gaps=1000, subscribers_with_gaps=10, missed_after_last=4000,
                            reloads=3, ended=7, end_errors="7 end of stream", drain_s=30, wall_s=60,
                            server_cpu_ticks=1000, client_cpu_ticks=11000, log_problem_lines=2,
                            log_problems=["503 too many connections", "x"])
    s = SimpleNamespace(nofile_soft="20000", vps="")
    row = report.fanout_row(run, 100)
    assert row["client_cpu_share"] == pytest.approx(11.0), "the clients' CPU over the server's"
    assert row["lost"] == 5000 and row["lost_per_sub"] == pytest.approx(5000 / 19400)
    assert row["cpu_us_per_delivery"] == pytest.approx(10 * 1e6 / (300 * 19400 - 5000))
    text = "\n".join(report.fanout_notes(s, [row], []))
    for expected in ("19400 of 19500 subscribers got their stream (100 status 503)", "19500* is capped",
                     "3 `event: reload`", "ended 7 streams", "1,000 ids were skipped", "503 too many connections",
                     "saturated", "19500 here"):
        assert expected in text, (expected, text)


def test_subscribers_that_got_nothing_are_said_so():
    run = records.FanoutRun(round=1, server="jetty-loom", requested=19500, subscribers=19500, cap_reason="",
                            client_processes=2, rate=10, duration_s=30, held=8191, commits=300, sent=300,
                            expected=300 * 8191, silent=8191, drain_s=5, wall_s=35)
    text = "\n".join(report.fanout_notes(SimpleNamespace(nofile_soft="unlimited", vps=""),
                                          [report.fanout_row(run, 100)], []))
    assert "8191 of 19500 subscribers got their stream" in text
    assert "none of the 8191 subscribers held received any of the 300 events" in text


def test_a_client_killed_before_its_result_leaves_deliveries_unknown():
    run = records.FanoutRun(round=1, server="kilim", requested=19500, subscribers=19500, cap_reason="",
                            client_processes=1, rate=10, duration_s=30, held=19500, commits=300, sent=300,
                            expected=300 * 19500, server_cpu_ticks=500, wall_s=60, cgroup_oom_kills=1,
                            client_errors="client 1 exited -9 without a result")
    row = report.fanout_row(run, 100)
    assert row["received"] is None and row["lost_per_sub"] is None and row["cpu_us_per_delivery"] is None
    text = "\n".join(report.fanout_notes(SimpleNamespace(nofile_soft="20000", vps="x"), [row], []))
    assert "deliveries, latency and losses unknown" in text and "OOM killer" in text
    assert "none of the" not in text
    header, cells = report.fanout_table(SimpleNamespace(vps="x"), [row])
    assert dict(zip(header, cells[0]))["deliveries/s"] == "-" and dict(zip(header, cells[0]))["OOM kills"] == "1"


# ---------------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------------
def test_help_documents_the_fanout_options():
    out = ab_sweep("--help").stdout
    for opt in ("--subscribers", "--rate", "--client-processes"):
        assert opt in out


def test_plan_only_shows_a_fanout_run_capped_by_the_open_files_limit():
    done = ab_sweep("--plan-only", "--subscribers", "1000,5000,25000", "--rate", "20", "--duration", "10",
                    "--client-processes", "3", "kilim", "loom")
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert out.startswith("Servers:     kilim loom\n"), "no anchors: they have no event stream"
    assert "over 3 client process(es)" in out and "GET /updates?queries=1 at 20/s for 10 s" in out
    assert "Subscribers:\n  n=1000\n  n=5000\n" in out
    if "soft 20000," in out:
        assert "  n=requested 25000, ran 19500: open-files limit 20000\n" in out
        assert "at most 19500 subscribers under this open-files limit" in out


@pytest.mark.parametrize("args, message", [
    (["kilim", "--subscribers", "10,,20"], "--subscribers takes numbers separated by commas"),
    (["kilim", "--subscribers", "100", "--memory"], "--subscribers and --memory do not go together"),
    (["kilim", "--subscribers", "100", "--latency"], "--subscribers and --latency do not go together"),
    (["kilim", "--subscribers", "100", "--concurrency", "10"], "--subscribers and --concurrency do not go together"),
    (["kilim", "--subscribers", "100", "--client", "wrk"], "--client does not apply"),
    (["kilim", "--rate", "5"], "--rate goes with --subscribers"),
    (["kilim", "--client-processes", "2"], "--client-processes goes with --subscribers"),
    (["kilim", "--subscribers", "100", "--rate", "0"], "--rate must be 1..1000 per second"),
])
def test_bad_fanout_usage_exits_2_and_says_why(args, message):
    done = ab_sweep(*args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr


def test_vps_goes_with_subscribers():
    done = ab_sweep("--plan-only", "--subscribers", "100", "--vps", "kilim")
    # Where cgroup v1 is not writable --vps exits 2 with its reason; never a usage error.
    assert done.returncode in (0, 2), done.stderr
    assert "do not go together" not in done.stderr
    if done.returncode == 0:
        assert "over 1 client process(es)" in done.stdout and "VPS:" in done.stdout


def test_requirements_pin_aiohttp_for_the_subscribers():
    pins = dict(line.split("==") for line in (SWEEP / "requirements.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    assert "aiohttp" in pins and "multidict" in pins and "yarl" in pins
    assert Path(ROOT / "ab-sweep.sh").is_file()
