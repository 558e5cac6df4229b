"""Wire-level tests of the dummy anchor (sweep/DummyServer.java): it must send the same bytes as a
kiln front end's GET /hello and follow the contract's keep-alive rules, or the anchor ratios compare
unlike work. Starts the server with the JDK's single-file launcher on a free loopback port.
Run: cd sweep && .venv/bin/python -m pytest tests/test_dummy.py"""

import re
import socket
import subprocess
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parent.parent / "DummyServer.java"
DATE = r"(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d\d:\d\d:\d\d GMT"


def response(version, connection=None):
    """The exact bytes expected for GET /hello, with the Date value as a regex."""
    head = (f"{version} 200 OK\r\nServer: kiln\r\nDate: {DATE}\r\n"
            "Content-Type: text/plain; charset=UTF-8\r\nContent-Length: 10\r\n")
    if connection:
        head += f"Connection: {connection}\r\n"
    return re.escape(head).replace(re.escape(DATE), DATE) + r"\r\nHelloWorld"


@pytest.fixture(scope="module")
def port():
    proc = subprocess.Popen(["java", "-Xmx64m", str(SOURCE), "--port", "0", "--bind", "127.0.0.1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        m = re.fullmatch(r"kiln-dummy listening on http://127\.0\.0\.1:(\d+)/\n", line)
        assert m, f"unexpected startup line {line!r}; stderr: {proc.stderr.read() if proc.poll() is not None else ''}"
        yield int(m.group(1))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()


def exchange(port, data, expect_close):
    """Sends `data`, returns everything received; reads until close or a 1 s quiet period."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(data)
        s.settimeout(1)
        got, closed = b"", False
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                closed = True
                break
            got += chunk
    assert closed == expect_close, f"connection closed={closed} after {data!r}"
    return got.decode("ascii")


def test_http11_keeps_the_connection_open_and_sends_the_hello_bytes(port):
    got = exchange(port, b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n", expect_close=False)
    assert re.fullmatch(response("HTTP/1.1"), got)


def test_http10_keep_alive_is_answered_with_connection_keep_alive(port):
    got = exchange(port, b"GET /hello HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", expect_close=False)
    assert re.fullmatch(response("HTTP/1.0", "keep-alive"), got)


def test_http10_without_keep_alive_closes(port):
    got = exchange(port, b"GET /hello HTTP/1.0\r\n\r\n", expect_close=True)
    assert re.fullmatch(response("HTTP/1.0", "close"), got)


def test_http11_connection_close_closes(port):
    got = exchange(port, b"GET /hello HTTP/1.1\r\nConnection: close\r\n\r\n", expect_close=True)
    assert re.fullmatch(response("HTTP/1.1", "close"), got)


def test_pipelined_requests_are_answered_in_order(port):
    got = exchange(port, b"GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
                   b"GET /c HTTP/1.0\r\n\r\n", expect_close=True)
    assert re.fullmatch(response("HTTP/1.1") + response("HTTP/1.0", "keep-alive") + response("HTTP/1.0", "close"),
                        got)


def test_bad_option_exits_2_with_usage():
    p = subprocess.run(["java", str(SOURCE), "--nope"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert "Usage:" in p.stderr
