#!/usr/bin/env python3
"""Report generator for ab-sweep.sh.

    report.py report RESULTS_DIR [--no-charts]
        Reads RESULTS_DIR/{settings.tsv, runs.tsv, after.tsv} and the raw client outputs they name,
        writes runs.csv, summary.csv, summary.json and, unless --no-charts, chart.png, chart.svg and
        report.html (self-contained: plotly.js inlined, no CDN), and prints the summary table.
    report.py step --client ab|wrk FILE
        Prints "COMPLETE REQ_PER_S FAILURES P50_MS P99_MS" for one raw client output ("-" when the
        file holds no result), for ab-sweep.sh's progress lines.

Parsing and the tables need only the standard library; the charts need matplotlib, plotly and
Jinja2 (sweep/requirements.txt), imported only when charts are made.

Definitions (see the README's "Benchmark sweep" section):
- failures = ab's Connect + Receive + Exceptions failures + write errors + non-2xx responses; ab's
  "Length" failures are not failures (/db, /queries legitimately vary in length; FACTS.md). For wrk:
  connect + read + write + timeout errors + non-2xx/3xx responses.
- server CPU us/request = (utime + stime of the server's processes during the timed run, from
  /proc/PID/stat) / completed requests.
- ratios to an anchor are taken per round (anchor measured in the same round), then the median.
"""

import argparse
import csv
import json
import re
import statistics
import sys
from pathlib import Path

ANCHORS = ("dummy", "nginx")
# ab is single-threaded: at this share of one core it is the bottleneck, not the server.
CLIENT_SATURATED_PCT = 90.0


# ---------------------------------------------------------------------------------------------
# Parsing the load clients' output
# ---------------------------------------------------------------------------------------------
def _number(pattern, text, cast=float, default=None):
    m = re.search(pattern, text, re.MULTILINE)
    return cast(m.group(1)) if m else default


def parse_ab(text):
    """Figures from ApacheBench's report, or None when it holds no result (ab aborted).

    Returns a dict: complete, rps (req/s), time_s, mean_ms ("Time per request (mean)": latency
    averaged over requests, ms), failures (see module doc) and its parts, and p50/p90/p99/max_ms from
    ab's whole-millisecond percentile table (parse_ab_csv gives them to the microsecond).
    """
    rps = _number(r"^Requests per second:\s+([\d.]+)", text)
    if rps is None:
        return None
    parts = {"connect": 0, "receive": 0, "length": 0, "exceptions": 0}
    m = re.search(r"\(Connect: (\d+), Receive: (\d+), Length: (\d+), Exceptions: (\d+)\)", text)
    if m:
        parts = dict(zip(parts, map(int, m.groups())))
    write_errors = _number(r"^Write errors:\s+(\d+)", text, int, 0)
    non_2xx = _number(r"^Non-2xx responses:\s+(\d+)", text, int, 0)
    pct = {int(p): float(v) for p, v in re.findall(r"^\s+(\d+)%\s+(\d+)", text, re.MULTILINE)}
    return {
        "complete": _number(r"^Complete requests:\s+(\d+)", text, int, 0),
        "rps": rps,
        "time_s": _number(r"^Time taken for tests:\s+([\d.]+)", text),
        "mean_ms": _number(r"^Time per request:\s+([\d.]+) \[ms\] \(mean\)$", text),
        "failures": parts["connect"] + parts["receive"] + parts["exceptions"] + write_errors + non_2xx,
        "failed_connect": parts["connect"],
        "failed_receive": parts["receive"],
        "failed_exceptions": parts["exceptions"],
        "failed_length_ignored": parts["length"],
        "write_errors": write_errors,
        "non_2xx": non_2xx,
        "p50_ms": pct.get(50),
        "p90_ms": pct.get(90),
        "p99_ms": pct.get(99),
        "max_ms": pct.get(100),
    }


def parse_ab_csv(text):
    """ab -e output ("Percentage served,Time in ms", rows 0..100) as {percent: ms}."""
    out = {}
    for line in text.splitlines()[1:]:
        p, _, ms = line.partition(",")
        if p.strip().isdigit() and ms:
            out[int(p)] = float(ms)
    return out


def parse_wrk(text):
    """Figures from wrk's report plus sweep/wrk-report.lua's KILN-WRK line, or None without it."""
    m = re.search(r"^KILN-WRK (\{.*\})$", text, re.MULTILINE)
    if not m:
        return None
    d = json.loads(m.group(1))
    e = d["errors"]
    lat = d["latency_us"]
    time_s = d["duration_us"] / 1e6
    return {
        "complete": d["requests"],
        "rps": d["requests"] / time_s if time_s > 0 else 0.0,
        "time_s": time_s,
        "mean_ms": lat["mean"] / 1000,
        "failures": e["connect"] + e["read"] + e["write"] + e["timeout"] + e["status"],
        "failed_connect": e["connect"],
        "failed_receive": e["read"],
        "failed_exceptions": e["timeout"],
        "failed_length_ignored": 0,
        "write_errors": e["write"],
        "non_2xx": e["status"],
        "p50_ms": lat["p50"] / 1000,
        "p90_ms": lat["p90"] / 1000,
        "p99_ms": lat["p99"] / 1000,
        "max_ms": lat["max"] / 1000,
    }


def parse_client_output(path, client):
    """Parses one raw output file; for ab, refines the percentiles from FILE.csv when present."""
    path = Path(path)
    if not path.is_file():
        return None
    text = path.read_text(errors="replace")
    if client == "wrk":
        return parse_wrk(text)
    m = parse_ab(text)
    csv_path = path.with_suffix(".csv")
    if m and csv_path.is_file():
        pct = parse_ab_csv(csv_path.read_text())
        for p, key in ((50, "p50_ms"), (90, "p90_ms"), (99, "p99_ms"), (100, "max_ms")):
            if p in pct:
                m[key] = pct[p]
    return m


# ---------------------------------------------------------------------------------------------
# Loading a results directory
# ---------------------------------------------------------------------------------------------
def _read_tsv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _max(values):
    values = [v for v in values if v is not None]
    return max(values) if values else None


def load(results_dir):
    """Returns (settings dict, runs list, after list) with every figure computed per timed run."""
    d = Path(results_dir)
    settings = {}
    for line in (d / "settings.tsv").read_text().splitlines():
        key, _, value = line.partition("\t")
        settings[key] = value
    advice = d / "nofile-advice.txt"
    settings["nofile_advice"] = advice.read_text() if advice.is_file() else ""
    problems = d / "problems.tsv"
    settings["problems"] = problems.read_text().splitlines() if problems.is_file() else []
    client = settings.get("client", "ab")
    threads = int(settings.get("wrk_threads", "1")) if client == "wrk" else 1
    hz = int(settings.get("clk_tck", "100"))

    runs = []
    for r in _read_tsv(d / "runs.tsv"):
        c = int(r["concurrency"])
        wall = float(r["wall_s"])
        m = parse_client_output(d / r["raw"], client) or {}
        err = d / (r["raw"] + ".err")
        err_lines = err.read_text(errors="replace").strip().splitlines() if err.is_file() else []
        complete = m.get("complete") or 0
        server_cpu_s = int(r["server_cpu_ticks"]) / hz
        client_cpu_pct = (int(r["client_user_ms"]) + int(r["client_sys_ms"])) / 1000 / wall * 100 if wall > 0 else None
        run = {
            "round": int(r["round"]),
            "server": r["server"],
            "step": int(r["step"]),
            "requested": int(r["requested"]),
            "concurrency": c,
            "cap_reason": r["cap_reason"],
            "label": step_label(int(r["requested"]), c, r["cap_reason"]),
            "ok": bool(m) and int(r["client_rc"]) == 0,
            "client_rc": int(r["client_rc"]),
            "client_error": err_lines[-1] if err_lines else "",
            "complete": complete,
            "rps": m.get("rps"),
            "failures": m.get("failures"),
            "failed_connect": m.get("failed_connect"),
            "failed_receive": m.get("failed_receive"),
            "failed_exceptions": m.get("failed_exceptions"),
            "failed_length_ignored": m.get("failed_length_ignored"),
            "write_errors": m.get("write_errors"),
            "non_2xx": m.get("non_2xx"),
            "mean_ms": m.get("mean_ms"),
            "p50_ms": m.get("p50_ms"),
            "p90_ms": m.get("p90_ms"),
            "p99_ms": m.get("p99_ms"),
            "max_ms": m.get("max_ms"),
            "requests_per_connection": complete / c if c else None,
            "wall_s": wall,
            "server_cpu_s": server_cpu_s,
            "server_cpu_us_per_request": server_cpu_s * 1e6 / complete if complete else None,
            "server_cpu_pct": server_cpu_s / wall * 100 if wall > 0 else None,
            # 0 kB: the server was gone when the step ended; no reading rather than a zero.
            "rss_peak_mb": int(r["rss_hwm_kb"]) / 1024 or None,
            "rss_mb": int(r["rss_kb"]) / 1024 or None,
            "client_cpu_pct": client_cpu_pct,
            "client_saturated": client_cpu_pct is not None and client_cpu_pct >= CLIENT_SATURATED_PCT * threads,
            "idle_wait_s": float(r["idle_wait_s"]),
            "idle_reached": r["idle_reached"] == "1",
            "server_alive": r["server_alive"] == "1",
            "raw": r["raw"],
        }
        runs.append(run)

    after = []
    after_path = d / "after.tsv"
    if after_path.is_file():
        for r in _read_tsv(after_path):
            pcts = [int(x) for x in r["cpu_pct_per_second"].split(",") if x]
            after.append({
                "round": int(r["round"]),
                "server": r["server"],
                "window_s": int(r["window_s"]),
                "cpu_pct_per_second": pcts,
                "cpu_pct_mean": statistics.mean(pcts) if pcts else None,
                "cpu_pct_max": max(pcts) if pcts else None,
            })
    return settings, runs, after


def step_label(requested, ran, reason):
    """How a step is named: a capped step is never labelled with the requested concurrency."""
    return f"requested {requested}, ran {ran}: {reason}" if reason else str(ran)


def server_order(settings, runs):
    listed = settings.get("servers", "").split()
    seen = [s for s in listed if any(r["server"] == s for r in runs)]
    return seen + sorted({r["server"] for r in runs} - set(seen))


# ---------------------------------------------------------------------------------------------
# Summaries
# ---------------------------------------------------------------------------------------------
def _same_round_pairs(runs, server, step, anchor, key):
    """(server's, anchor's) value of `key` in each round where both ran `step` and measured it."""
    for r in runs:
        if r["server"] != server or r["step"] != step or not r["ok"] or r[key] is None:
            continue
        for a in runs:
            if a["server"] == anchor and a["step"] == step and a["round"] == r["round"] and a["ok"] and a[key] is not None:
                yield r[key], a[key]


def _per_round_ratio(runs, server, step, anchor, key):
    """Median over rounds of server/anchor for `key`, both taken in the same round."""
    return _median(v / base for v, base in _same_round_pairs(runs, server, step, anchor, key) if base)


def _per_round_diff_us(runs, server, step, anchor, key):
    """Median over rounds of (server - anchor) for a latency `key` in ms, in microseconds."""
    return _median((v - base) * 1000 for v, base in _same_round_pairs(runs, server, step, anchor, key))


def summarize(settings, runs):
    """One row per server and step: medians over the rounds (max for failures, RSS, client CPU)."""
    rows = []
    for server in server_order(settings, runs):
        for step in sorted({r["step"] for r in runs if r["server"] == server}):
            group = [r for r in runs if r["server"] == server and r["step"] == step]
            ok = [r for r in group if r["ok"]]
            first = group[0]
            row = {
                "server": server,
                "step": step,
                "requested": first["requested"],
                "concurrency": first["concurrency"],
                "cap_reason": first["cap_reason"],
                "label": first["label"],
                "rounds": len(group),
                "rounds_ok": len(ok),
                "rps_median": _median(r["rps"] for r in ok),
                "failures_max": _max(r["failures"] for r in ok),
                "mean_ms_median": _median(r["mean_ms"] for r in ok),
                "p50_ms_median": _median(r["p50_ms"] for r in ok),
                "p90_ms_median": _median(r["p90_ms"] for r in ok),
                "p99_ms_median": _median(r["p99_ms"] for r in ok),
                "max_ms_median": _median(r["max_ms"] for r in ok),
                "server_cpu_us_per_request_median": _median(r["server_cpu_us_per_request"] for r in ok),
                "server_cpu_pct_median": _median(r["server_cpu_pct"] for r in ok),
                "rss_peak_mb_max": _max(r["rss_peak_mb"] for r in group),
                "client_cpu_pct_max": _max(r["client_cpu_pct"] for r in ok),
                "client_saturated": any(r["client_saturated"] for r in ok),
                "requests_per_connection_median": _median(r["requests_per_connection"] for r in ok),
            }
            for anchor in ANCHORS:
                row[f"rps_vs_{anchor}"] = _per_round_ratio(runs, server, step, anchor, "rps")
                row[f"cpu_vs_{anchor}"] = _per_round_ratio(runs, server, step, anchor, "server_cpu_us_per_request")
            if settings.get("mode") == "latency":
                for key in ("mean_ms", "p50_ms", "p99_ms"):
                    row[f"{key[:-3]}_us_vs_dummy"] = _per_round_diff_us(runs, server, step, "dummy", key)
            rows.append(row)
    return rows


def round_trips(summary):
    """Latency mode: the single-connection round trip (c=1: mean time per request), in us."""
    return [{"server": s["server"], "round_trip_us": s["mean_ms_median"] * 1000,
             "vs_dummy_us": s.get("mean_us_vs_dummy")}
            for s in summary if s["concurrency"] == 1 and s["mean_ms_median"] is not None]


def summarize_after(settings, runs, after):
    rows = []
    for server in server_order(settings, runs):
        group = [a for a in after if a["server"] == server]
        if group:
            rows.append({
                "server": server,
                "rounds": len(group),
                "cpu_pct_mean_median": _median(a["cpu_pct_mean"] for a in group),
                "cpu_pct_max": _max(a["cpu_pct_max"] for a in group),
                "cpu_pct_per_second": [a["cpu_pct_per_second"] for a in group],
            })
    return rows


def notes(settings, runs):
    """Plain-language warnings a reader must see next to the numbers."""
    out = []
    capped = sorted({(r["requested"], r["concurrency"], r["cap_reason"]) for r in runs if r["cap_reason"]})
    for requested, ran, reason in capped:
        out.append(f"{ran}* is a capped step: requested {requested}, ran {ran}: {reason}.")
    if settings.get("plan_notes"):
        out.append("Skipped: " + settings["plan_notes"])
    for line in settings.get("problems", []):
        rnd, _, rest = line.partition("\t")
        out.append(f"Round {rnd}: {rest.partition(chr(9))[2]}")
    for r in runs:
        where = f"{r['server']} c={r['label']} round {r['round']}"
        if not r["ok"]:
            why = r["client_error"] or f"exit status {r['client_rc']}"
            out.append(f"{where}: the client reported no usable result ({why}); left out of the medians.")
        if not r["server_alive"]:
            out.append(f"{where}: the server died during this step; its later steps in this round are missing.")
        if not r["idle_reached"]:
            out.append(f"{where}: the server was still busy (CPU >= {settings.get('idle_threshold_pct', '5')}%) "
                       f"after {r['idle_wait_s']:.0f} s of waiting before the timed run.")
    sat = sorted({(r["server"], r["concurrency"], r["cap_reason"]) for r in runs if r["client_saturated"] and r["ok"]},
                 key=lambda t: (server_order(settings, runs).index(t[0]), t[1]))
    if sat:
        out.append("The client was saturated (>= 90% of its core) in some round at: "
                   + ", ".join(f"{s} c={c}{'*' if capped else ''}" for s, c, capped in sat)
                   + ". There the client, not the server, limits req/s: compare CPU us/request instead.")
    return out


# ---------------------------------------------------------------------------------------------
# Output files
# ---------------------------------------------------------------------------------------------
RUN_FIELDS = ["round", "server", "step", "requested", "concurrency", "cap_reason", "ok", "client_rc", "complete",
              "rps", "failures", "failed_connect", "failed_receive", "failed_exceptions", "write_errors", "non_2xx",
              "failed_length_ignored", "mean_ms", "p50_ms", "p90_ms", "p99_ms", "max_ms",
              "requests_per_connection", "wall_s", "server_cpu_s", "server_cpu_us_per_request", "server_cpu_pct",
              "rss_peak_mb", "rss_mb", "client_cpu_pct", "client_saturated", "idle_wait_s", "idle_reached",
              "server_alive", "raw"]


def _csv_value(v):
    if isinstance(v, float):
        return f"{v:.3f}"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return "" if v is None else v


def write_csv(path, rows, fields):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for row in rows:
            w.writerow({k: _csv_value(row.get(k)) for k in fields})


def summary_fields(settings):
    fields = ["server", "requested", "concurrency", "cap_reason", "rounds", "rounds_ok", "rps_median",
              "failures_max", "mean_ms_median", "p50_ms_median", "p90_ms_median", "p99_ms_median", "max_ms_median",
              "server_cpu_us_per_request_median", "server_cpu_pct_median", "rss_peak_mb_max", "client_cpu_pct_max",
              "client_saturated", "requests_per_connection_median",
              "rps_vs_dummy", "rps_vs_nginx", "cpu_vs_dummy", "cpu_vs_nginx"]
    if settings.get("mode") == "latency":
        fields += ["mean_us_vs_dummy", "p50_us_vs_dummy", "p99_us_vs_dummy"]
    return fields


def fmt(v, digits=0, suffix=""):
    """Number formatting shared by the printed table and the HTML report."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return f"{v:,.{digits}f}{suffix}"


def table_rows(settings, summary):
    """The summary table as (header, rows of strings), the same in the terminal and the HTML."""
    latency = settings.get("mode") == "latency"
    if latency:
        header = ["server", "c", "req/s", "failed", "mean ms", "p50 ms", "p90 ms", "p99 ms", "max ms",
                  "CPU us/req", "mean vs dummy us", "p99 vs dummy us", "RSS MB", "client CPU"]
    else:
        header = ["server", "c", "req/s", "failed", "p50 ms", "p99 ms", "CPU us/req", "CPU %", "RSS MB",
                  "client CPU", "req/s vs dummy", "req/s vs nginx", "CPU vs dummy", "CPU vs nginx"]
    rows = []
    for s in summary:
        # A capped step shows what ran, starred; the notes say what was requested and why.
        step = f"{s['concurrency']}*" if s["cap_reason"] else str(s["concurrency"])
        client = fmt(s["client_cpu_pct_max"], 0, "%") + (" sat." if s["client_saturated"] else "")
        if latency:
            rows.append([s["server"], step, fmt(s["rps_median"]), fmt(s["failures_max"]),
                         fmt(s["mean_ms_median"], 3), fmt(s["p50_ms_median"], 3), fmt(s["p90_ms_median"], 3),
                         fmt(s["p99_ms_median"], 3), fmt(s["max_ms_median"], 3),
                         fmt(s["server_cpu_us_per_request_median"], 1), fmt(s.get("mean_us_vs_dummy"), 1),
                         fmt(s.get("p99_us_vs_dummy"), 1), fmt(s["rss_peak_mb_max"]), client])
        else:
            rows.append([s["server"], step, fmt(s["rps_median"]), fmt(s["failures_max"]),
                         fmt(s["p50_ms_median"], 2), fmt(s["p99_ms_median"], 2),
                         fmt(s["server_cpu_us_per_request_median"], 1), fmt(s["server_cpu_pct_median"]),
                         fmt(s["rss_peak_mb_max"]), client, fmt(s["rps_vs_dummy"], 2), fmt(s["rps_vs_nginx"], 2),
                         fmt(s["cpu_vs_dummy"], 2), fmt(s["cpu_vs_nginx"], 2)])
    return header, rows


def print_table(settings, summary, after_rows, note_lines):
    header, rows = table_rows(settings, summary)
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = lambda cells: "  ".join(str(c).rjust(w) if i > 1 else str(c).ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    print()
    print(f"Summary: {settings.get('path', '/hello')} with {settings.get('client', 'ab')}, "
          f"medians over {settings.get('rounds')} round(s); failed = max over rounds")
    print(line(header))
    print(line(["-" * w for w in widths]))
    for r in rows:
        print(line(r))
    trips = round_trips(summary) if settings.get("mode") == "latency" else []
    if trips:
        print()
        print("Single-connection round trip (c=1, keep-alive; median over rounds):")
        for t in trips:
            print(f"  {t['server']:<18} {fmt(t['round_trip_us'], 1)} us   vs dummy {fmt(t['vs_dummy_us'], 1)} us")
    if after_rows:
        print()
        print(f"Server CPU in the {settings.get('after_window_s', '10')} s after the sweep (% of one core, per second):")
        for a in after_rows:
            per_round = "; ".join(" ".join(str(p) for p in pcts) for pcts in a["cpu_pct_per_second"])
            print(f"  {a['server']:<18} mean {fmt(a['cpu_pct_mean_median'], 0)}%  max {fmt(a['cpu_pct_max'])}%  [{per_round}]")
    for n in note_lines:
        print("Note: " + n)


# ---------------------------------------------------------------------------------------------
# Charts (matplotlib PNG/SVG, plotly HTML)
# ---------------------------------------------------------------------------------------------
def _series(summary, server, key):
    """Every step of `server`, in order; y is None where the step gave no figure, so that charts
    show a gap there instead of a line drawn across steps that were not measured."""
    pts = [(s["concurrency"], s[key], s) for s in summary if s["server"] == server]
    return [p[0] for p in pts], [p[1] for p in pts], [p[2] for p in pts]


def _gaps(y):
    """matplotlib breaks a line at NaN, not at None."""
    return [float("nan") if v is None else v for v in y]


def _capped_ticks(summary):
    ticks = sorted({s["concurrency"] for s in summary})
    capped = {s["concurrency"] for s in summary if s["cap_reason"]}
    return ticks, [f"{t}*" if t in capped else str(t) for t in ticks]


def chart_png(settings, summary, out_png, out_svg):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    latency = settings.get("mode") == "latency"
    servers = list(dict.fromkeys(s["server"] for s in summary))
    colors = {srv: plt.get_cmap("tab10")(i % 10) for i, srv in enumerate(servers)}
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 9), sharex=True, height_ratios=[3, 2])
    ticks, tick_labels = _capped_ticks(summary)
    if latency:
        for srv in servers:
            x, y, _ = _series(summary, srv, "p50_ms_median")
            top.plot(x, _gaps(y), marker="o", color=colors[srv], label=f"{srv} p50")
            x, y, _ = _series(summary, srv, "p99_ms_median")
            top.plot(x, _gaps(y), marker="x", linestyle="--", color=colors[srv], label=f"{srv} p99")
        top.set_ylabel("latency, ms (median over rounds)")
        top.set_yscale("log")
        bottom.set_xscale("log")
        top.legend(fontsize=8, ncol=2)
    else:
        right = top.twinx()
        for srv in servers:
            x, y, _ = _series(summary, srv, "rps_median")
            top.plot(x, _gaps(y), marker="o", color=colors[srv], label=f"{srv} req/s")
            x, y, _ = _series(summary, srv, "failures_max")
            right.plot(x, _gaps(y), marker="x", linestyle=":", color=colors[srv], label=f"{srv} failed")
        top.set_ylabel("req/s (median over rounds, solid)")
        right.set_ylabel("failed requests (max over rounds, dotted)")
        # Integer ticks, and a visible 0..1 range when nothing failed.
        right.set_ylim(0, max(1, max((s["failures_max"] or 0) for s in summary) * 1.1))
        right.yaxis.get_major_locator().set_params(integer=True)
        top.set_ylim(bottom=0)
        h1, l1 = top.get_legend_handles_labels()
        h2, l2 = right.get_legend_handles_labels()
        top.legend(h1 + h2, l1 + l2, fontsize=8, ncol=2, loc="best")
    for srv in servers:
        x, y, _ = _series(summary, srv, "server_cpu_us_per_request_median")
        bottom.plot(x, _gaps(y), marker="o", color=colors[srv], label=srv)
    bottom.set_ylabel("server CPU, us/request (median)")
    bottom.set_ylim(bottom=0)
    bottom.set_xlabel("concurrent keep-alive connections" + ("  (* capped: see the report)" if any(s["cap_reason"] for s in summary) else ""))
    bottom.set_xticks(ticks)
    bottom.set_xticklabels(tick_labels, rotation=30 if len(ticks) > 6 else 0)
    for ax in (top, bottom):
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"kiln {'latency' if latency else 'sweep'}: GET {settings.get('path')} with {settings.get('client')}, {settings.get('pinning')}, "
                 f"heap {settings.get('heap')}\n{settings.get('date')}, {settings.get('rounds')} round(s), "
                 f"{settings.get('cpu_model')}", fontsize=10)
    fig.tight_layout()
    fig.savefig(out_png, dpi=110)
    fig.savefig(out_svg)
    plt.close(fig)


def plotly_figures(settings, summary):
    """The interactive charts: one legend group per server, so a click toggles all its lines."""
    import plotly.graph_objects as go
    from plotly.colors import qualitative
    from plotly.subplots import make_subplots

    latency = settings.get("mode") == "latency"
    servers = list(dict.fromkeys(s["server"] for s in summary))
    colors = {srv: qualitative.Plotly[i % len(qualitative.Plotly)] for i, srv in enumerate(servers)}
    ticks, tick_labels = _capped_ticks(summary)
    hover = ("<b>%{customdata[0]}</b> c=%{customdata[1]}<br>req/s %{customdata[2]}<br>failed %{customdata[3]}"
             "<br>p50 %{customdata[4]} ms, p99 %{customdata[5]} ms<br>CPU %{customdata[6]} us/req"
             "<br>RSS %{customdata[7]} MB<extra></extra>")

    def custom(rows):
        return [[r["server"], r["label"], fmt(r["rps_median"]), fmt(r["failures_max"]), fmt(r["p50_ms_median"], 3),
                 fmt(r["p99_ms_median"], 3), fmt(r["server_cpu_us_per_request_median"], 1),
                 fmt(r["rss_peak_mb_max"])] for r in rows]

    def axis(fig, title, **kw):
        fig.update_xaxes(title_text="concurrent keep-alive connections", tickvals=ticks, ticktext=tick_labels,
                         type="log" if latency else "linear", **kw)
        fig.update_layout(title=title, hovermode="closest", height=460, margin=dict(t=60, b=60),
                          legend=dict(groupclick="togglegroup"))

    figs = []
    if latency:
        f1 = go.Figure()
        for srv in servers:
            for key, dash, name in (("p50_ms_median", "solid", "p50"), ("p99_ms_median", "dash", "p99")):
                x, y, rows = _series(summary, srv, key)
                f1.add_trace(go.Scatter(x=x, y=y, name=f"{srv} {name}", legendgroup=srv, mode="lines+markers",
                                        line=dict(color=colors[srv], dash=dash), customdata=custom(rows),
                                        hovertemplate=hover))
        axis(f1, "Latency (median over rounds), ms")
        f1.update_yaxes(title_text="ms", type="log")
        figs.append(("latency", f1))
    else:
        f1 = make_subplots(specs=[[{"secondary_y": True}]])
        for srv in servers:
            x, y, rows = _series(summary, srv, "rps_median")
            f1.add_trace(go.Scatter(x=x, y=y, name=f"{srv} req/s", legendgroup=srv, mode="lines+markers",
                                    line=dict(color=colors[srv]), customdata=custom(rows), hovertemplate=hover),
                         secondary_y=False)
            x, y, rows = _series(summary, srv, "failures_max")
            f1.add_trace(go.Scatter(x=x, y=y, name=f"{srv} failed", legendgroup=srv, mode="lines+markers",
                                    line=dict(color=colors[srv], dash="dot"), marker=dict(symbol="x"),
                                    customdata=custom(rows), hovertemplate=hover), secondary_y=True)
        axis(f1, "Median req/s (left, solid) and max failed requests (right, dotted)")
        f1.update_yaxes(title_text="req/s", rangemode="tozero", secondary_y=False)
        most = max((s["failures_max"] or 0) for s in summary)
        # Whole numbers only; with few or no failures, one tick per request and a visible 0..1 range.
        f1.update_yaxes(title_text="failed requests", range=[0, max(1, most * 1.1)], tickformat=",d",
                        dtick=1 if most <= 5 else None, secondary_y=True)
        figs.append(("throughput", f1))
    for key, title, unit, name in (
            ("server_cpu_us_per_request_median", "Server CPU time per request (median)", "us/request", "cpu"),
            ("p99_ms_median", "p99 latency (median over rounds)", "ms", "p99"),
            ("rss_peak_mb_max", "Peak server RSS (VmHWM, max over rounds)", "MB", "rss")):
        if latency and name == "p99":
            continue
        f = go.Figure()
        for srv in servers:
            x, y, rows = _series(summary, srv, key)
            f.add_trace(go.Scatter(x=x, y=y, name=srv, legendgroup=srv, mode="lines+markers",
                                   line=dict(color=colors[srv]), customdata=custom(rows), hovertemplate=hover))
        axis(f, title)
        f.update_yaxes(title_text=unit, rangemode="tozero")
        figs.append((name, f))
    return figs


def report_html(settings, summary, runs, after_rows, note_lines, out_html):
    import jinja2
    import plotly.io as pio

    figs = plotly_figures(settings, summary)
    charts = []
    for i, (name, fig) in enumerate(figs):
        # plotly.js is inlined once, in the first chart: the page works offline, without a CDN.
        charts.append(pio.to_html(fig, full_html=False, include_plotlyjs=(i == 0), div_id=f"chart-{name}",
                                  config={"displaylogo": False, "responsive": True}))
    header, rows = table_rows(settings, summary)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent), autoescape=True)
    html = env.get_template("report.html.j2").render(
        settings=settings, charts=charts, header=header, rows=rows, summary=summary, runs=runs,
        round_trips=round_trips(summary) if settings.get("mode") == "latency" else [],
        after_rows=after_rows, notes=note_lines, fmt=fmt, run_fields=RUN_FIELDS)
    Path(out_html).write_text(html)


# ---------------------------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------------------------
def cmd_report(args):
    d = Path(args.results_dir)
    settings, runs, after = load(d)
    if not runs:
        print(f"report: {d} holds no timed runs", file=sys.stderr)
        return 1
    summary = summarize(settings, runs)
    after_rows = summarize_after(settings, runs, after)
    note_lines = notes(settings, runs)
    write_csv(d / "runs.csv", runs, RUN_FIELDS)
    fields = summary_fields(settings)
    write_csv(d / "summary.csv", summary, fields)
    doc = {"settings": settings, "notes": note_lines, "summary": summary,
           "round_trips": round_trips(summary) if settings.get("mode") == "latency" else [],
           "after_sweep": after_rows,
           "after_sweep_per_round": after, "runs": runs}
    (d / "summary.json").write_text(json.dumps(doc, indent=2) + "\n")
    files = ["runs.csv", "summary.csv", "summary.json"]
    if not args.no_charts:
        chart_png(settings, summary, d / "chart.png", d / "chart.svg")
        report_html(settings, summary, runs, after_rows, note_lines, d / "report.html")
        files += ["chart.png", "chart.svg", "report.html"]
    print_table(settings, summary, after_rows, note_lines)
    print()
    print(f"Report: {d}/  ({', '.join(files)}; raw outputs in raw/, server logs in logs/)")
    return 0


def cmd_step(args):
    m = parse_client_output(args.file, args.client)
    if not m:
        print("0 - - - -")
        return 0
    cells = [m["complete"], f"{m['rps']:.0f}", m["failures"],
             "-" if m["p50_ms"] is None else f"{m['p50_ms']:.2f}", "-" if m["p99_ms"] is None else f"{m['p99_ms']:.2f}"]
    print(" ".join(str(c) for c in cells))
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("report", help="write CSV/JSON/PNG/HTML for a results directory")
    r.add_argument("results_dir")
    r.add_argument("--no-charts", action="store_true", help="only CSV, JSON and the printed table")
    r.set_defaults(func=cmd_report)
    s = sub.add_parser("step", help="one-line figures of one raw client output")
    s.add_argument("--client", choices=("ab", "wrk"), default="ab")
    s.add_argument("file")
    s.set_defaults(func=cmd_step)
    args = p.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
