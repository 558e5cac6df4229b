"""The load clients, ApacheBench and wrk: their command lines and what their output says.

failures = ab's Connect + Receive + Exceptions failures + write errors + non-2xx responses; ab's
"Length" failures are not failures (/db, /queries legitimately vary in length; FACTS.md). For wrk:
connect + read + write + timeout errors + non-2xx/3xx responses."""

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from kiln_sweep import SWEEP_DIR

WRK_SCRIPT = SWEEP_DIR / "wrk-report.lua"


@dataclass
class ClientResult:
    """One client run's figures; latencies in ms, rps in req/s."""
    complete: int
    rps: float
    time_s: Optional[float]
    mean_ms: Optional[float]
    failures: int
    failed_connect: int
    failed_receive: int
    failed_exceptions: int
    failed_length_ignored: int
    write_errors: int
    non_2xx: int
    p50_ms: Optional[float]
    p90_ms: Optional[float]
    p99_ms: Optional[float]
    max_ms: Optional[float]


def command(client, concurrency, requests, time_limit_s, url, csv_file=None, wrk_threads=1):
    """The client's command line: ab serves `requests` or stops at time_limit_s, whichever comes first;
    wrk has no count and runs time_limit_s. csv_file receives ab's percentile table to the microsecond."""
    if client == "ab":
        # -t before -n: ab's -t resets the request count, -n then sets ours. -r: count receive errors
        # instead of aborting; -l: do not count length changes as failures (/db varies, FACTS.md).
        cmd = ["ab", "-q", "-k", "-r", "-l", "-s", "30", "-t", str(time_limit_s), "-n", str(requests),
               "-c", str(concurrency)]
        if csv_file:
            cmd += ["-e", str(csv_file)]
    else:
        cmd = ["wrk", "-t", str(wrk_threads), "-c", str(concurrency), "-d", f"{time_limit_s}s", "--timeout", "30s",
               "-s", str(WRK_SCRIPT)]
    return cmd + [url]


def _number(pattern, text, cast=float, default=None):
    m = re.search(pattern, text, re.MULTILINE)
    return cast(m.group(1)) if m else default


def parse_ab(text):
    """ApacheBench's report as a ClientResult, or None when it holds no result (ab aborted). Its
    percentiles are the whole-millisecond table; parse_ab_csv gives them to the microsecond."""
    rps = _number(r"^Requests per second:\s+([\d.]+)", text)
    if rps is None:
        return None
    m = re.search(r"\(Connect: (\d+), Receive: (\d+), Length: (\d+), Exceptions: (\d+)\)", text)
    connect, receive, length, exceptions = map(int, m.groups()) if m else (0, 0, 0, 0)
    write_errors = _number(r"^Write errors:\s+(\d+)", text, int, 0)
    non_2xx = _number(r"^Non-2xx responses:\s+(\d+)", text, int, 0)
    pct = {int(p): float(v) for p, v in re.findall(r"^\s+(\d+)%\s+(\d+)", text, re.MULTILINE)}
    return ClientResult(
        complete=_number(r"^Complete requests:\s+(\d+)", text, int, 0), rps=rps,
        time_s=_number(r"^Time taken for tests:\s+([\d.]+)", text),
        mean_ms=_number(r"^Time per request:\s+([\d.]+) \[ms\] \(mean\)$", text),
        failures=connect + receive + exceptions + write_errors + non_2xx,
        failed_connect=connect, failed_receive=receive, failed_exceptions=exceptions,
        failed_length_ignored=length, write_errors=write_errors, non_2xx=non_2xx,
        p50_ms=pct.get(50), p90_ms=pct.get(90), p99_ms=pct.get(99), max_ms=pct.get(100))


def parse_ab_csv(text):
    """ab -e output ("Percentage served,Time in ms", rows 0..100) as {percent: ms}."""
    out = {}
    for line in text.splitlines()[1:]:
        p, _, ms = line.partition(",")
        if p.strip().isdigit() and ms:
            out[int(p)] = float(ms)
    return out


def parse_wrk(text):
    """wrk's report with sweep/wrk-report.lua's KILN-WRK line as a ClientResult, or None without it."""
    m = re.search(r"^KILN-WRK (\{.*\})$", text, re.MULTILINE)
    if not m:
        return None
    d = json.loads(m.group(1))
    e, lat = d["errors"], d["latency_us"]
    time_s = d["duration_us"] / 1e6
    return ClientResult(
        complete=d["requests"], rps=d["requests"] / time_s if time_s > 0 else 0.0, time_s=time_s,
        mean_ms=lat["mean"] / 1000,
        failures=e["connect"] + e["read"] + e["write"] + e["timeout"] + e["status"],
        failed_connect=e["connect"], failed_receive=e["read"], failed_exceptions=e["timeout"],
        failed_length_ignored=0, write_errors=e["write"], non_2xx=e["status"],
        p50_ms=lat["p50"] / 1000, p90_ms=lat["p90"] / 1000, p99_ms=lat["p99"] / 1000, max_ms=lat["max"] / 1000)


def parse_output(path, client):
    """One raw output file as a ClientResult (None: no file or no result); for ab, the percentiles
    come from FILE.csv when it is there."""
    path = Path(path)
    if not path.is_file():
        return None
    text = path.read_text(errors="replace")
    if client == "wrk":
        return parse_wrk(text)
    result = parse_ab(text)
    csv_path = path.with_suffix(".csv")
    if result and csv_path.is_file():
        pct = parse_ab_csv(csv_path.read_text())
        result.p50_ms = pct.get(50, result.p50_ms)
        result.p90_ms = pct.get(90, result.p90_ms)
        result.p99_ms = pct.get(99, result.p99_ms)
        result.max_ms = pct.get(100, result.max_ms)
    return result
