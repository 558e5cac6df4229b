"""The JVM anchors on the wire and in the plan. For GET /hello, /plaintext and /json the Netty anchor
(bench-netty/) sends the bytes kiln's Kilim front end sends (the Date aside) under each keep-alive rule
and when pipelined, or the ratios to it would compare unlike work; the Vert.x anchor (bench-vertx/) too,
but for what Vert.x writes its own way. Each runs on its own JVM flags, and on kiln's under --vps; netty
is left out of a sweep of a path it does not serve. Starts the jars on loopback ports the kernel picks
(building them when outdated, as the sweep does)."""

import re
import socket
import subprocess
import time
from email.utils import parsedate_to_datetime

import pytest

from conftest import ROOT, ab_sweep
from kiln_sweep import registry, servers

DATE = re.compile(rb"\r\nDate: ([^\r]*)\r\n")
IMF_FIXDATE = re.compile(rb"(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) "
                         rb"\d{4} \d\d:\d\d:\d\d GMT")


def start(name, tmp_path):
    """(process, port) of a server of the sweep's registry started with --port 0."""
    server = registry.known(ROOT)[name]
    if registry.jar_outdated(ROOT, server):
        servers.build(ROOT, server, tmp_path / f"build-{name}.log")
    java = servers.Java(servers.find_java(ROOT, server.jdk))
    data = tmp_path / f"data-{name}"
    data.mkdir()
    cmd = servers.command(server, java, None, 0, data, None)
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        m = re.fullmatch(r"\S+ listening on http://127\.0\.0\.1:(\d+)/\n", line)
        if m:
            return proc, int(m.group(1))
        assert line, f"{name} exited before it was ready"
    proc.kill()
    pytest.fail(f"{name} did not start within 120 s")


@pytest.fixture(scope="module")
def ports(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("anchor")
    started = {}
    try:
        for name in ("kilim", "netty", "vertx"):
            started[name] = start(name, tmp)
        yield {name: port for name, (_, port) in started.items()}
    finally:
        for proc, _ in started.values():
            proc.terminate()
            proc.wait(timeout=30)
            proc.stdout.close()


def exchange(port, data):
    """Sends `data`; everything received until the server closes or is quiet for 1 s, and whether it closed."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(data)
        s.settimeout(1)
        got = b""
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                return got, False
            if not chunk:
                return got, True
            got += chunk


def without_dates(response):
    for date in DATE.findall(response):
        assert IMF_FIXDATE.fullmatch(date), date
    return DATE.sub(b"\r\nDate: -\r\n", response)


@pytest.mark.parametrize("path", registry.ANCHOR_PATHS)
@pytest.mark.parametrize("request_head", [
    b"HTTP/1.1\r\nHost: x\r\n\r\n",
    b"HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n",          # ab -k
    b"HTTP/1.0\r\n\r\n",
    b"HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
])
def test_netty_sends_kilims_bytes(ports, path, request_head):
    data = b"GET " + path.encode() + b" " + request_head
    kilim, netty = exchange(ports["kilim"], data), exchange(ports["netty"], data)
    assert kilim[0].startswith(b"HTTP/1.1 200 OK\r\nServer: kiln\r\n"), kilim
    assert (without_dates(netty[0]), netty[1]) == (without_dates(kilim[0]), kilim[1])


@pytest.mark.parametrize("path", registry.ANCHOR_PATHS)
@pytest.mark.parametrize("request_head", [
    b"HTTP/1.1\r\nHost: x\r\n\r\n",
    b"HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n",          # ab -k
])
def test_vertx_sends_kilims_bytes_but_for_its_version_and_connection_spelling(ports, path, request_head):
    data = b"GET " + path.encode() + b" " + request_head
    kilim, vertx = exchange(ports["kilim"], data), exchange(ports["vertx"], data)
    # Vert.x answers an HTTP/1.0 request with an HTTP/1.0 status line and names the header it adds
    # 'connection': the same length, the same work.
    spelled = re.sub(rb"^HTTP/1\.0 ", b"HTTP/1.1 ", vertx[0]).replace(b"\r\nconnection: ", b"\r\nConnection: ")
    assert (without_dates(spelled), vertx[1]) == (without_dates(kilim[0]), kilim[1])


def test_vertx_closes_when_asked(ports):
    for data in (b"GET /hello HTTP/1.0\r\n\r\n", b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"):
        got, closed = exchange(ports["vertx"], data)
        assert closed and got.endswith(b"\r\n\r\nHelloWorld"), got


def test_pipelined_requests_are_answered_in_order_as_kilim_answers_them(ports):
    data = (b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\nGET /json HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
            b"GET /plaintext HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
    kilim, netty = exchange(ports["kilim"], data), exchange(ports["netty"], data)
    assert netty[1] and netty[0].count(b"HTTP/1.1 200 OK") == 3, netty
    assert without_dates(netty[0]) == without_dates(kilim[0])


@pytest.mark.parametrize("anchor", ["netty", "vertx"])
def test_the_date_follows_the_clock(ports, anchor):
    # One Date per event loop, rebuilt by a task at the start of every second.
    for _ in range(3):
        got, _ = exchange(ports[anchor], b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        sent = parsedate_to_datetime(DATE.search(got).group(1).decode()).timestamp()
        assert abs(time.time() - sent) < 2.5, (got, time.time())
        time.sleep(1)


def test_an_unknown_path_is_a_404_and_closes(ports):
    got, closed = exchange(ports["netty"], b"GET /db HTTP/1.1\r\nHost: x\r\n\r\n")
    assert got.startswith(b"HTTP/1.1 404 Not Found\r\n") and closed, got


@pytest.mark.parametrize("anchor", ["netty", "vertx"])
def test_an_anchor_runs_on_its_own_flags_and_on_kilns_under_vps(tmp_path, anchor):
    known = registry.known(ROOT)
    java = servers.Java("java")
    own = servers.command(known[anchor], java, None, 1, tmp_path, None)
    vps = servers.command(known[anchor], java, None, 1, tmp_path, None, same_flags=True)
    kilim = servers.command(known["kilim"], java, None, 1, tmp_path, None, same_flags=True)
    assert f"@{ROOT / f'bench-{anchor}' / 'jvm.options'}" in own and f"@{servers.JVM_OPTIONS}" not in own
    assert vps[:vps.index("-jar")] == kilim[:kilim.index("-jar")], "--vps: the anchor on exactly kiln's JVM flags"
    assert vps[vps.index("-jar"):] == ["-jar", f"bench-{anchor}/target/{anchor}-anchor.jar", "--port", "1", "--bind",
                                       "127.0.0.1"]


def test_netty_is_left_out_of_a_path_it_does_not_serve_unless_named():
    done = ab_sweep("--plan-only", "--path", "/db", "kilim")
    assert done.stdout.splitlines()[0] == "Servers:     dummy nginx kilim", done.stdout
    assert "anchor netty left out: it serves /hello, /plaintext, /json only, not /db" in done.stdout
    done = ab_sweep("--plan-only", "--path", "/plaintext", "kilim")
    assert done.stdout.splitlines()[0] == "Servers:     dummy nginx netty kilim", done.stdout
    done = ab_sweep("--plan-only", "--path", "/db", "netty", "kilim")
    assert done.stdout.splitlines()[0] == "Servers:     dummy nginx netty kilim", done.stdout


def test_vertx_is_measured_only_when_named():
    assert "vertx" not in ab_sweep("--plan-only", "kilim").stdout.splitlines()[0]
    done = ab_sweep("--plan-only", "kilim", "vertx")
    assert done.stdout.splitlines()[0] == "Servers:     dummy nginx netty kilim vertx", done.stdout
    assert "vertx: its own, @bench-vertx/jvm.options" in done.stdout
