"""The sweep's report: reads a results directory's records (settings.json, runs.jsonl, after.jsonl,
problems.jsonl) and the raw client outputs they name; writes runs.csv, summary.csv, summary.json and,
with charts, chart.png, chart.svg and report.html (kiln_sweep.charts); prints the summary table.

    python3 -m kiln_sweep.report RESULTS_DIR [--no-charts]

This module needs only the standard library; the charts need the venv (sweep/requirements.txt).

Definitions (see the README's "Benchmark sweep" section):
- failures: see kiln_sweep.clients.
- server CPU us/request = (utime + stime of the server's processes during the timed run, from
  /proc/PID/stat) / completed requests.
- ratios to an anchor are taken per round (anchor measured in the same round), then the median.
"""

import argparse
import csv
import json
import statistics
import sys
from dataclasses import asdict
from pathlib import Path

from kiln_sweep import clients, records
from kiln_sweep.plan import step_label
from kiln_sweep.registry import ANCHORS

# ab is single-threaded: at this share of one core it is the bottleneck, not the server.
CLIENT_SATURATED_PCT = 90.0


# ---------------------------------------------------------------------------------------------
# Loading a results directory
# ---------------------------------------------------------------------------------------------
def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _max(values):
    values = [v for v in values if v is not None]
    return max(values) if values else None


def figures(d, r, settings):
    """Every figure of one TimedRun: its record, its client output and what follows from them."""
    threads = settings.wrk_threads or 1
    c, wall = r.concurrency, r.wall_s
    result = clients.parse_output(d / r.raw, settings.client)
    m = asdict(result) if result else {}
    err = d / (r.raw + ".err")
    err_lines = err.read_text(errors="replace").strip().splitlines() if err.is_file() else []
    complete = m.get("complete") or 0
    server_cpu_s = r.server_cpu_ticks / settings.clk_tck
    client_cpu_pct = (r.client_user_ms + r.client_sys_ms) / 1000 / wall * 100 if wall > 0 else None
    return {
        "round": r.round, "server": r.server, "step": r.step, "requested": r.requested, "concurrency": c,
        "cap_reason": r.cap_reason, "label": step_label(r.requested, c, r.cap_reason),
        "ok": bool(m) and r.client_rc == 0, "client_rc": r.client_rc,
        "client_error": err_lines[-1] if err_lines else "",
        "complete": complete,
        **{k: m.get(k) for k in ("rps", "failures", "failed_connect", "failed_receive", "failed_exceptions",
                                 "failed_length_ignored", "write_errors", "non_2xx", "mean_ms", "p50_ms", "p90_ms",
                                 "p99_ms", "max_ms")},
        "requests_per_connection": complete / c if c else None,
        "wall_s": wall,
        "server_cpu_s": server_cpu_s,
        "server_cpu_us_per_request": server_cpu_s * 1e6 / complete if complete else None,
        "server_cpu_pct": server_cpu_s / wall * 100 if wall > 0 else None,
        # 0 kB: the server was gone when the step ended; no reading rather than a zero.
        "rss_peak_mb": r.rss_hwm_kb / 1024 or None,
        "rss_mb": r.rss_kb / 1024 or None,
        "client_cpu_pct": client_cpu_pct,
        "client_saturated": client_cpu_pct is not None and client_cpu_pct >= CLIENT_SATURATED_PCT * threads,
        "idle_wait_s": r.idle_wait_s,
        "idle_reached": r.idle_reached,
        "server_alive": r.server_alive,
        "raw": r.raw,
    }


def load(results_dir):
    """(Settings, runs: one dict of figures per timed run, after: one dict per after-sweep window,
    problems: Problem records)."""
    d = Path(results_dir)
    settings = records.read_settings(d)
    runs = [figures(d, r, settings) for r in records.read(d, records.RUNS, records.TimedRun)]
    after = []
    for a in records.read(d, records.AFTER, records.AfterWindow):
        pcts = a.cpu_pct_per_second
        after.append({**asdict(a), "cpu_pct_mean": statistics.mean(pcts) if pcts else None,
                      "cpu_pct_max": max(pcts) if pcts else None})
    return settings, runs, after, records.read(d, records.PROBLEMS, records.Problem)


def server_order(settings, runs):
    seen = [s for s in settings.servers if any(r["server"] == s for r in runs)]
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
            if settings.mode == "latency":
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


def notes(settings, runs, problems=()):
    """Plain-language warnings a reader must see next to the numbers."""
    out = []
    capped = sorted({(r["requested"], r["concurrency"], r["cap_reason"]) for r in runs if r["cap_reason"]})
    for requested, ran, reason in capped:
        out.append(f"{ran}* is a capped step: requested {requested}, ran {ran}: {reason}.")
    if settings.plan_notes:
        out.append("Skipped: " + "; ".join(settings.plan_notes))
    for p in problems:
        out.append(f"Round {p.round}: {p.message}")
    for r in runs:
        where = f"{r['server']} c={r['label']} round {r['round']}"
        if not r["ok"]:
            why = r["client_error"] or f"exit status {r['client_rc']}"
            out.append(f"{where}: the client reported no usable result ({why}); left out of the medians.")
        if not r["server_alive"]:
            out.append(f"{where}: the server died during this step; its later steps in this round are missing.")
        if not r["idle_reached"]:
            out.append(f"{where}: the server was still busy (CPU >= {settings.idle_threshold_pct}%) "
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
    if settings.mode == "latency":
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
    latency = settings.mode == "latency"
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
    print(f"Summary: {settings.path} with {settings.client}, "
          f"medians over {settings.rounds} round(s); failed = max over rounds")
    print(line(header))
    print(line(["-" * w for w in widths]))
    for r in rows:
        print(line(r))
    trips = round_trips(summary) if settings.mode == "latency" else []
    if trips:
        print()
        print("Single-connection round trip (c=1, keep-alive; median over rounds):")
        for t in trips:
            print(f"  {t['server']:<18} {fmt(t['round_trip_us'], 1)} us   vs dummy {fmt(t['vs_dummy_us'], 1)} us")
    if after_rows:
        print()
        print(f"Server CPU in the {settings.after_window_s} s after the sweep (% of one core, per second):")
        for a in after_rows:
            per_round = "; ".join(" ".join(str(p) for p in pcts) for pcts in a["cpu_pct_per_second"])
            print(f"  {a['server']:<18} mean {fmt(a['cpu_pct_mean_median'], 0)}%  max {fmt(a['cpu_pct_max'])}%  [{per_round}]")
    for n in note_lines:
        print("Note: " + n)


# ---------------------------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------------------------
def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m kiln_sweep.report", description=__doc__.split("\n\n")[0])
    p.add_argument("results_dir")
    p.add_argument("--no-charts", action="store_true", help="only CSV, JSON and the printed table")
    args = p.parse_args(argv)
    d = Path(args.results_dir)
    settings, runs, after, problems = load(d)
    if not runs:
        print(f"report: {d} holds no timed runs", file=sys.stderr)
        return 1
    summary = summarize(settings, runs)
    after_rows = summarize_after(settings, runs, after)
    note_lines = notes(settings, runs, problems)
    write_csv(d / "runs.csv", runs, RUN_FIELDS)
    write_csv(d / "summary.csv", summary, summary_fields(settings))
    doc = {"settings": asdict(settings), "notes": note_lines, "summary": summary,
           "round_trips": round_trips(summary) if settings.mode == "latency" else [],
           "after_sweep": after_rows, "after_sweep_per_round": after, "runs": runs}
    (d / "summary.json").write_text(json.dumps(doc, indent=2) + "\n")
    files = ["runs.csv", "summary.csv", "summary.json"]
    if not args.no_charts:
        from kiln_sweep import charts
        charts.chart_png(settings, summary, d / "chart.png", d / "chart.svg")
        charts.report_html(settings, summary, runs, after_rows, note_lines, d / "report.html")
        files += ["chart.png", "chart.svg", "report.html"]
    print_table(settings, summary, after_rows, note_lines)
    print()
    print(f"Report: {d}/  ({', '.join(files)}; raw outputs in raw/, server logs in logs/)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
