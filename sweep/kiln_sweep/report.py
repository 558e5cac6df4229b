"""The sweep's report: reads a results directory's records (settings.json, runs.jsonl, after.jsonl,
problems.jsonl) and the raw client outputs they name; writes runs.csv, summary.csv, summary.json and
prints the summary table (--memory: memory.jsonl to memory.csv/json; --subscribers: fanout.jsonl to
fanout.csv/json). The charts (chart.png, chart.svg, report.html) are drawn by whoever passes
them in: kiln_sweep.charts, on the venv's python.

    python3 -m kiln_sweep.report RESULTS_DIR          CSV, JSON and the table
    python -m kiln_sweep.charts RESULTS_DIR           the same with the charts (sweep/.venv/bin/python)

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

from kiln_sweep import clients, idle, pinning, records
from kiln_sweep.plan import FD_SPARE, step_label
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
        "cgroup_peak_mb": r.cgroup_peak_bytes / 1048576 if r.cgroup_peak_bytes is not None else None,
        "cgroup_failcnt": r.cgroup_failcnt,
        "cgroup_oom_kills": r.cgroup_oom_kills,
        "oom_victim": oom_victim(r),
        "pinned_events": r.pinned_events,
        "pinned_max_ms": r.pinned_max_ms,
        "pinned_top": r.pinned_top,
        "pinned_error": r.pinned_error,
        "syscalls_per_req": r.syscalls_per_request,
        "syscalls_per_req_by_name": r.syscalls_per_request_by_name,
        "perf_top": r.perf_top,
        "perf_error": r.perf_error,
        "nmt_committed_mb": r.nmt_committed_kb / 1024 if r.nmt_committed_kb is not None else None,
        "nmt_committed_mb_by_category": {k: v / 1024 for k, v in r.nmt_committed_kb_by_category.items()},
        "nmt_error": r.nmt_error,
    }


def oom_victim(r):
    """--vps: who the kernel's OOM killer took in the group during the step: "server", "client" (ab
    killed by SIGKILL: timeout exits 137), "other" (a process the group held besides them), "" when
    none, None when the kernel does not count OOM kills (older than 4.13) or it was not measured."""
    if r.cgroup_oom_kills is None:
        return None
    if r.cgroup_oom_kills == 0:
        return ""
    who = [w for w, hit in (("server", not r.server_alive), ("client", r.client_rc in (137, -9))) if hit]
    return "+".join(who) or "other"


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
                "cgroup_peak_mb_max": _max(r["cgroup_peak_mb"] for r in group),
                "oom_killed": _oom_killed(group),
                "pinned_events_max": _max(r["pinned_events"] for r in group),
                "syscalls_per_req_median": _median(r["syscalls_per_req"] for r in ok),
                "nmt_committed_mb_max": _max(r["nmt_committed_mb"] for r in group),
            }
            for anchor in ANCHORS:
                row[f"rps_vs_{anchor}"] = _per_round_ratio(runs, server, step, anchor, "rps")
                row[f"cpu_vs_{anchor}"] = _per_round_ratio(runs, server, step, anchor, "server_cpu_us_per_request")
            if settings.mode == "latency":
                for key in ("mean_ms", "p50_ms", "p99_ms"):
                    row[f"{key[:-3]}_us_vs_dummy"] = _per_round_diff_us(runs, server, step, "dummy", key)
            rows.append(row)
    return rows


def _oom_killed(group):
    """--vps: "yes (server)" etc. when the OOM killer struck in any round, "no" when it never did,
    None when not measured or not countable."""
    victims = [r["oom_victim"] for r in group]
    if all(v is None for v in victims):
        return None
    hit = sorted({v for v in victims if v})
    return f"yes ({', '.join(hit)})" if hit else "no"


def summarize_pinning(settings, runs):
    """Per server with a JFR recording: events per step (max over rounds), the total, the longest, the
    most frequent places over all steps and rounds, and any dump that could not be read."""
    rows = []
    for server in server_order(settings, runs):
        group = [r for r in runs if r["server"] == server and (r["pinned_events"] is not None or r["pinned_error"])]
        if not group:
            continue
        places = {}
        for r in group:
            for count, reason, where in r["pinned_top"] or []:
                places[(reason, where)] = places.get((reason, where), 0) + count
        steps = []
        for step in sorted({r["step"] for r in group}):
            rs = [r for r in group if r["step"] == step]
            steps.append((rs[0]["label"], _max(r["pinned_events"] for r in rs)))
        total = sum(r["pinned_events"] or 0 for r in group)
        rows.append({
            "server": server, "steps": steps, "events": total,
            "max_ms": _max(r["pinned_max_ms"] for r in group),
            "top": [[n, reason, where] for (reason, where), n in sorted(places.items(), key=lambda kv: -kv[1])[:3]],
            "errors": sorted({r["pinned_error"] for r in group if r["pinned_error"]}),
        })
    return rows


def summarize_profiles(settings, runs):
    """--perf: per server, the flat CPU profile of its highest step (the last round that has one):
    {server, label, round, top: [[percent, dso, symbol], ...]}."""
    rows = []
    for server in server_order(settings, runs):
        group = [r for r in runs if r["server"] == server and r["perf_top"]]
        if group:
            r = max(group, key=lambda r: (r["step"], r["round"]))
            rows.append({"server": server, "label": r["label"], "round": r["round"], "top": r["perf_top"]})
    return rows


def pinning_text(row, threshold_ms):
    per_step = ", ".join(f"c={label}: {'-' if n is None else n}" for label, n in row["steps"])
    line = pinning.text({"events": row["events"], "max_ms": row["max_ms"], "top": row["top"]}, threshold_ms)
    return f"{per_step}; total {line}" + (f"; not read: {'; '.join(row['errors'])}" if row["errors"] else "")


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
        if r["oom_victim"]:
            out.append(f"{where}: the kernel's OOM killer killed {r['cgroup_oom_kills']} process(es) in the --vps "
                       f"cgroup ({r['oom_victim']}).")
        if not r["idle_reached"]:
            out.append(f"{where}: the server was still busy (CPU >= {settings.idle_threshold_pct}%) "
                       f"after {r['idle_wait_s']:.0f} s of waiting before the timed run.")
        if r["perf_error"]:
            out.append(f"{where}: --perf: {r['perf_error']}.")
        if r["nmt_error"]:
            out.append(f"{where}: --nmt: {r['nmt_error']}.")
    if settings.perf:
        out.append("--perf: perf was attached to each server during its timed runs; the kernel's counting and "
                   "sampling cost the server some CPU, so compare CPU figures only within this sweep. syscalls/req: "
                   "every system call the server's processes entered (raw_syscalls:sys_enter) per completed request.")
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
              "server_alive", "cgroup_peak_mb", "cgroup_failcnt", "cgroup_oom_kills", "oom_victim", "pinned_events",
              "pinned_max_ms", "syscalls_per_req", "nmt_committed_mb", "raw"]


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
              *(f"rps_vs_{a}" for a in ANCHORS), *(f"cpu_vs_{a}" for a in ANCHORS)]
    if settings.mode == "latency":
        fields += ["mean_us_vs_dummy", "p50_us_vs_dummy", "p99_us_vs_dummy"]
    if settings.vps:
        fields += ["cgroup_peak_mb_max", "oom_killed"]
    if settings.pinned_threshold_ms is not None:
        fields += ["pinned_events_max"]
    if settings.perf:
        fields += ["syscalls_per_req_median"]
    if settings.nmt:
        fields += ["nmt_committed_mb_max"]
    return fields


def fmt(v, digits=0, suffix=""):
    """Number formatting shared by the printed table and the HTML report."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return f"{v:,.{digits}f}{suffix}"


def table_rows(settings, summary):
    """The summary table as (header, rows of strings), the same in the terminal and the HTML; --perf and
    --nmt add their columns at the end."""
    header, rows = _table_rows(settings, summary)
    extra = [(h, key, digits) for on, h, key, digits in (
        (settings.perf, "syscalls/req", "syscalls_per_req_median", 2),
        (settings.nmt, "JVM committed (NMT) MB", "nmt_committed_mb_max", 0)) if on]
    header = header + [h for h, _, _ in extra]
    rows = [row + [fmt(s[key], digits) for _, key, digits in extra] for row, s in zip(rows, summary)]
    return header, rows


def _table_rows(settings, summary):
    latency = settings.mode == "latency"
    if settings.vps:
        # --vps: what a $5 VPS owner asks: does it keep up, does it fail, how slow at the tail, how much
        # memory (the server's own and the whole box's: server + client + page cache), does anything die.
        header = ["server", "c", "req/s", "failed", "p99 ms", "server RSS MB", "cgroup peak MB", "OOM-killed"]
        rows = [[s["server"], f"{s['concurrency']}*" if s["cap_reason"] else str(s["concurrency"]),
                 fmt(s["rps_median"]), fmt(s["failures_max"]), fmt(s["p99_ms_median"], 2), fmt(s["rss_peak_mb_max"]),
                 fmt(s["cgroup_peak_mb_max"]), s["oom_killed"] or "unknown"] for s in summary]
        return header, rows
    if latency:
        header = ["server", "c", "req/s", "failed", "mean ms", "p50 ms", "p90 ms", "p99 ms", "max ms",
                  "CPU us/req", "mean vs dummy us", "p99 vs dummy us", "RSS MB", "client CPU"]
    else:
        header = ["server", "c", "req/s", "failed", "p50 ms", "p99 ms", "CPU us/req", "CPU %", "RSS MB",
                  "client CPU", *(f"req/s vs {a}" for a in ANCHORS), *(f"CPU vs {a}" for a in ANCHORS)]
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
                         fmt(s["rss_peak_mb_max"]), client, *(fmt(s[f"rps_vs_{a}"], 2) for a in ANCHORS),
                         *(fmt(s[f"cpu_vs_{a}"], 2) for a in ANCHORS)])
    return header, rows


def print_table(settings, summary, after_rows, note_lines, pinning_rows=(), profile_rows=()):
    header, rows = table_rows(settings, summary)
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = lambda cells: "  ".join(str(c).rjust(w) if i > 1 else str(c).ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    print()
    print(f"Summary: {settings.path} with {settings.client}, "
          f"medians over {settings.rounds} round(s); failed = max over rounds")
    if settings.vps:
        print(f"--vps: {settings.vps}")
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
    if pinning_rows:
        print()
        print(f"Carrier pinning (JFR {pinning.EVENT} >= {settings.pinned_threshold_ms} ms, during each step's "
              "warm-up and timed run; most in any round):")
        for p in pinning_rows:
            print(f"  {p['server']:<18} {pinning_text(p, settings.pinned_threshold_ms)}")
    if profile_rows:
        print()
        print("CPU profile (perf record, share of the server's samples in its highest step; raw/*-perf-top.txt "
              "has 15 rows per run):")
        for p in profile_rows:
            print(f"  {p['server']} c={p['label']} round {p['round']}:")
            for pct, dso, sym in p["top"]:
                print(f"    {pct:5.1f}%  {dso}  {sym}")
    for n in note_lines:
        print("Note: " + n)


# ---------------------------------------------------------------------------------------------
# --memory: bytes per idle connection
# ---------------------------------------------------------------------------------------------
TOP_CLASSES = 5


def memory_row(d, run):
    """The figures of one MemoryRun. Divided by the connections the server still held when measured
    (still_open), which is all of them unless it closed some. Heap: the class histograms' totals
    (live objects after a full GC), after minus before; RSS: VmRSS after minus before (which also
    counts heap pages first touched since, so it is not only live memory)."""
    per = run.still_open
    row = {"server": run.server, "round": run.round, "requested": run.requested, "connections": run.connections,
           "cap_reason": run.cap_reason, "label": step_label(run.requested, run.connections, run.cap_reason),
           "opened": run.opened, "still_open": run.still_open, "established": run.established, "open_s": run.open_s,
           "errors": run.errors, "error": run.error, "heap_bytes_per_conn": None, "rss_bytes_per_conn": None,
           "heap_before_mb": None, "heap_after_mb": None, "rss_before_mb": run.rss_before_kb / 1024 or None,
           "rss_after_mb": run.rss_after_kb / 1024 or None, "top": []}
    if run.error or not per:
        return row
    row["rss_bytes_per_conn"] = (run.rss_after_kb - run.rss_before_kb) * 1024 / per
    if run.histogram_before and run.histogram_after:
        before = idle.parse_histogram((Path(d) / run.histogram_before).read_text())
        after = idle.parse_histogram((Path(d) / run.histogram_after).read_text())
        row["heap_bytes_per_conn"], top = idle.diff(before, after, per, TOP_CLASSES)
        row["heap_before_mb"], row["heap_after_mb"] = before.bytes / 1048576, after.bytes / 1048576
        row["top"] = [{"class": c, "instances_per_conn": n, "bytes_per_conn": b} for c, n, b in top]
    return row


def _capped_and_problems(rows, ran_key, problems):
    """The notes a --memory or --subscribers report opens with: each capped count, then each round's problem."""
    out = []
    for requested, ran, reason in sorted({(r["requested"], r[ran_key], r["cap_reason"]) for r in rows if r["cap_reason"]}):
        out.append(f"{ran}* is capped: requested {requested}, ran {ran}: {reason}.")
    for p in problems:
        out.append(f"Round {p.round}: {p.message}")
    return out


def memory_notes(rows, problems):
    out = _capped_and_problems(rows, "connections", problems)
    for r in rows:
        where = f"{r['server']} c={r['label']} round {r['round']}"
        if r["error"]:
            out.append(f"{where}: not measured: {r['error']}")
            continue
        if r["opened"] < r["connections"]:
            out.append(f"{where}: {r['opened']} of {r['connections']} connections completed their request "
                       f"({r['errors'] or 'no error reported'}).")
        if r["still_open"] < r["opened"]:
            out.append(f"{where}: the server closed {r['opened'] - r['still_open']} idle connections before the "
                       "measurement ended; figures are per connection it still held.")
    if any(r["heap_bytes_per_conn"] is None and not r["error"] for r in rows):
        out.append("heap n/a: not a JVM (nginx); RSS only.")
    out.append("RSS per connection also counts heap pages the JVM touched for the first time since the baseline "
               "(the heap is fixed with -Xms = -Xmx but not pre-touched) and off-heap buffers; kernel socket buffers "
               "are in neither figure.")
    return out


def print_memory_table(settings, rows, note_lines):
    header = ["server", "connections", "heap B/conn", "RSS B/conn", "heap before MB", "heap after MB",
              "RSS before MB", "RSS after MB"]
    cells = [[r["server"], f"{r['connections']}*" if r["cap_reason"] else str(r["connections"]),
              fmt(r["heap_bytes_per_conn"]), fmt(r["rss_bytes_per_conn"]), fmt(r["heap_before_mb"], 1),
              fmt(r["heap_after_mb"], 1), fmt(r["rss_before_mb"], 1), fmt(r["rss_after_mb"], 1)] for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *cells)]
    line = lambda cs: "  ".join(str(c).rjust(w) if i > 1 else str(c).ljust(w) for i, (c, w) in enumerate(zip(cs, widths)))
    print()
    print(f"Idle keep-alive connections: bytes per connection (one GET {settings.path} each, then idle; "
          f"heap up to {settings.heap}; {settings.rounds} round(s), one row each)")
    print(line(header))
    print(line(["-" * w for w in widths]))
    for c in cells:
        print(line(c))
    tops = [r for r in rows if r["top"]]
    if tops:
        print()
        print(f"Top {TOP_CLASSES} classes per connection by heap bytes (bytes/conn, instances/conn in brackets):")
        for r in tops:
            print(f"  {r['server']:<18} " + "; ".join(
                f"{t['class']} {fmt(t['bytes_per_conn'], 1)} ({fmt(t['instances_per_conn'], 2)})" for t in r["top"]))
    for n in note_lines:
        print("Note: " + n)


MEMORY_FIELDS = ["server", "round", "requested", "connections", "cap_reason", "opened", "still_open", "established",
                 "open_s", "heap_bytes_per_conn", "rss_bytes_per_conn", "heap_before_mb", "heap_after_mb",
                 "rss_before_mb", "rss_after_mb", "errors", "error"] + \
    [f"top{i}_{k}" for i in range(1, TOP_CLASSES + 1) for k in ("class", "bytes_per_conn", "instances_per_conn")]


def write_memory(d, draw_memory=None):
    settings = records.read_settings(d)
    runs = records.read(d, records.MEMORY, records.MemoryRun)
    if not runs:
        print(f"report: {d} holds no {records.MEMORY} records", file=sys.stderr)
        return 1
    order = {name: i for i, name in enumerate(settings.servers)}
    rows = sorted((memory_row(d, r) for r in runs), key=lambda r: (order.get(r["server"], 99), r["connections"],
                                                                     r["round"]))
    note_lines = memory_notes(rows, records.read(d, records.PROBLEMS, records.Problem))
    flat = []
    for r in rows:
        f = dict(r)
        for i, t in enumerate(r["top"], 1):
            f.update({f"top{i}_class": t["class"], f"top{i}_bytes_per_conn": t["bytes_per_conn"],
                      f"top{i}_instances_per_conn": t["instances_per_conn"]})
        flat.append(f)
    write_csv(d / "memory.csv", flat, MEMORY_FIELDS)
    (d / "memory.json").write_text(json.dumps({"settings": asdict(settings), "notes": note_lines, "memory": rows},
                                              indent=2) + "\n")
    files = ["memory.csv", "memory.json"]
    if draw_memory:
        files += draw_memory(d, settings, rows, note_lines)
    print_memory_table(settings, rows, note_lines)
    print()
    print(f"Report: {d}/  ({', '.join(files)}; histograms in raw/, server logs in logs/)")
    return 0


# ---------------------------------------------------------------------------------------------
# --subscribers: the fan-out benchmark
# ---------------------------------------------------------------------------------------------
def _per(value, n):
    return value / n if value is not None and n else None


def fanout_row(run, clk_tck):
    """The figures of one FanoutRun. Per subscriber: divided by the subscribers held. Heap: the class
    histograms' totals (live objects after a full GC) with all held, minus the one before they connected;
    RSS likewise from VmRSS. Rates and CPU over publish + drain (wall_s)."""
    r = run
    # A subscriber process that ended without its result (the OOM killer): what its subscribers received is
    # unknown, so are the step's deliveries, latency and losses.
    known = not r.client_errors
    heap = r.heap_after_bytes - r.heap_before_bytes if None not in (r.heap_after_bytes, r.heap_before_bytes) else None
    cpu_s = r.server_cpu_ticks / clk_tck
    lost = max(0, r.expected - r.received) if known else None
    row = {
        "server": r.server, "round": r.round, "requested": r.requested, "subscribers": r.subscribers,
        "cap_reason": r.cap_reason, "label": step_label(r.requested, r.subscribers, r.cap_reason),
        "held": r.held, "client_processes": r.client_processes, "connect_s": r.connect_s,
        "connect_errors": r.connect_errors, "established": r.established,
        "heap_bytes_per_sub": _per(heap, r.held) if not r.error or heap is not None else None,
        "rss_bytes_per_sub": _per((r.rss_after_kb - r.rss_before_kb) * 1024, r.held) if r.rss_after_kb else None,
        "heap_before_mb": _per(r.heap_before_bytes, 1048576), "heap_after_mb": _per(r.heap_after_bytes, 1048576),
        "rss_before_mb": r.rss_before_kb / 1024 or None, "rss_after_mb": r.rss_after_kb / 1024 or None,
        "rate": r.rate, "duration_s": r.duration_s, "warmup_commits": r.warmup_commits,
        "warmup_last_id": r.warmup_last_id, "sent": r.sent, "commits": r.commits,
        "publish_failures": r.publish_failures, "publish_s": r.publish_s, "publish_late": r.publish_late,
        "commits_per_s": _per(r.commits, r.publish_s), "publish_answer_ms_p50": r.publish_answer_ms_p50,
        "publish_answer_ms_p99": r.publish_answer_ms_p99, "publish_answer_ms_max": r.publish_answer_ms_max, "drain_s": r.drain_s, "wall_s": r.wall_s,
        "expected": r.expected, "received": r.received,
        "delivered_pct": 100 * r.received / r.expected if r.expected else None,
        "deliveries_per_s": _per(r.received, r.wall_s),
        "target_per_s": r.commits / r.publish_s * r.held if r.publish_s else None,
        "events_per_chunk": _per(r.received, r.chunks),
        "p50_ms": r.p50_ms, "p99_ms": r.p99_ms, "max_ms": r.max_ms, "negative": r.negative,
        "lost": lost, "lost_per_sub": _per(lost, r.held), "gaps": r.gaps, "gaps_per_sub": _per(r.gaps, r.held),
        "subscribers_with_gaps": r.subscribers_with_gaps, "duplicates": r.duplicates,
        "missed_before_first": r.missed_before_first, "missed_after_last": r.missed_after_last, "silent": r.silent,
        "reloads": r.reloads, "other_events": r.other_events, "malformed": r.malformed,
        "dropped": r.ended, "end_errors": r.end_errors,
        "per_subscriber_min": r.per_subscriber_min, "per_subscriber_max": r.per_subscriber_max,
        "server_cpu_s": cpu_s, "cpu_us_per_delivery": _per(cpu_s * 1e6, r.received),
        "server_cpu_pct": _per(cpu_s * 100, r.wall_s),
        "client_cpu_pct": _per(r.client_cpu_ticks / clk_tck * 100, r.wall_s),
        "client": r.client, "client_cpu_s": r.client_cpu_ticks / clk_tck,
        # The client's own CPU as a share of what it measures (the server's, same window): it must stay well
        # under 1 for the client not to be what sets the figures (under --vps both share one CPU).
        "client_cpu_share": _per(r.client_cpu_ticks, r.server_cpu_ticks),
        "client_rss_mb": r.client_rss_kb / 1024 or None, "rss_peak_mb": r.rss_hwm_kb / 1024 or None,
        "cgroup_peak_mb": _per(r.cgroup_peak_bytes, 1048576), "cgroup_oom_kills": r.cgroup_oom_kills,
        "server_alive": r.server_alive, "log_problem_lines": r.log_problem_lines, "log_problems": r.log_problems,
        "client_errors": r.client_errors, "error": r.error, "latency_histogram": r.latency_histogram,
        "deliveries_known": known,
    }
    if not known:
        for key in ("received", "delivered_pct", "deliveries_per_s", "events_per_chunk", "p50_ms", "p99_ms", "max_ms",
                    "gaps", "gaps_per_sub", "missed_after_last", "silent", "cpu_us_per_delivery"):
            row[key] = None
    return row


def fanout_notes(settings, rows, problems):
    """What a reader must know next to the fan-out table."""
    out = []
    if settings.nofile_soft.isdigit():
        limit = int(settings.nofile_soft)
        out.append(f"Subscriber counts stop at the open-files limit minus {FD_SPARE} ({limit} - {FD_SPARE} = "
                   f"{limit - FD_SPARE} here): every subscriber is a descriptor in the server (and one in a client "
                   "process). A VPS with ulimit -n 102400 can hold more.")
    out.extend(_capped_and_problems(rows, "subscribers", problems))
    for r in rows:
        where = f"{r['server']} n={r['label']} round {r['round']}"
        if r["error"]:
            out.append(f"{where}: {r['error']}")
        if r["held"] < r["subscribers"]:
            out.append(f"{where}: {r['held']} of {r['subscribers']} subscribers got their stream "
                       f"({r['connect_errors'] or 'no error reported'}).")
        if r["publish_late"]:
            out.append(f"{where}: {r['publish_late']} of {r['sent']} commits went out over 100 ms late (all "
                       f"publisher connections waiting for answers; /updates p99 {fmt(r['publish_answer_ms_p99'])} ms): "
                       f"{fmt(r['commits_per_s'], 1)} commits/s instead of {r['rate']}.")
        if r["publish_failures"]:
            out.append(f"{where}: {r['sent'] - r['commits']} of {r['sent']} commits failed ({r['publish_failures']}).")
        if not r["deliveries_known"]:
            out.append(f"{where}: deliveries, latency and losses unknown: a subscriber process ended without its "
                       "result" + (" (the OOM killer struck in the --vps cgroup: the client's memory, see "
                                   "sweep/FanoutClient.java or kiln_sweep.subscribers)" if r["cgroup_oom_kills"] else "") + ".")
        elif r["expected"] and r["received"] == 0:
            out.append(f"{where}: none of the {r['held']} subscribers held received any of the {r['commits']} "
                       "events committed in the publish phase.")
        elif r["expected"] and r["received"] < r["expected"]:
            out.append(f"{where}: {r['received']:,} of {r['expected']:,} deliveries arrived "
                       f"({r['delivered_pct']:.1f} %) by the end of the {r['drain_s']:.0f} s drain; inside the streams "
                       f"{r['gaps']:,} ids were skipped ({r['subscribers_with_gaps']} subscribers), "
                       f"{r['missed_after_last']:,} came after the clients stopped or never"
                       + (f", {r['silent']} subscribers received none" if r["silent"] else "") + ".")
        if r["reloads"]:
            out.append(f"{where}: {r['reloads']} `event: reload` (a subscriber fell behind the server's window): "
                       "a failure.")
        if r["dropped"]:
            out.append(f"{where}: the server ended {r['dropped']} streams ({r['end_errors']}).")
        if r["malformed"] or r["other_events"]:
            out.append(f"{where}: {r['malformed']} events without a readable id or committedAt, {r['other_events']} "
                       "of another type.")
        if r["negative"]:
            out.append(f"{where}: {r['negative']} events were read before their committedAt (clock granularity); "
                       "counted as 0 ms.")
        if r["cgroup_oom_kills"]:
            out.append(f"{where}: the kernel's OOM killer killed {r['cgroup_oom_kills']} process(es) in the --vps "
                       "cgroup.")
        if not r["server_alive"]:
            out.append(f"{where}: the server died.")
        if r["log_problem_lines"]:
            out.append(f"{where}: {r['log_problem_lines']} server log line(s) look like trouble, first: "
                       + " | ".join(r["log_problems"][:2]))
        if r["client_errors"]:
            out.append(f"{where}: {r['client_errors']}")
    sat = [r for r in rows if r["client_cpu_pct"] is not None and
           r["client_cpu_pct"] >= CLIENT_SATURATED_PCT * r["client_processes"]]
    if sat:
        out.append("The subscriber processes were saturated (each >= 90 % of a core) at: "
                   + ", ".join(f"{r['server']} n={r['label']}" for r in sat)
                   + ". There the clients, not the server, set deliveries/s, and latency includes their queue.")
    out.append("Latency: from the event's committedAt (the commit durable, server clock) to the client process reading "
               "its last bytes (same machine's clock), over every delivery; 0.1 ms buckets, exact max. The clients "
               "share the machine's CPUs with the server" + (" and, under --vps, its one CPU" if settings.vps else "")
               + ": their queueing is in the figures.")
    out.append("Each count starts with a warm-up: a few seconds of commits at the same rate whose events are "
               "delivered but not counted (a fresh server's first events wait for class loading and the JIT).")
    out.append("CPU us/delivery: the server's utime + stime over the publish phase and the drain, divided by the "
               "events received; it includes the publisher's /updates requests and commits.")
    out.append("client/server CPU: the subscriber processes' utime + stime over the same window divided by the "
               "server's: the client's own share of the CPU it measures (FanoutClient.java's goal: under 0.25).")
    return out


def fanout_table(settings, rows):
    """The fan-out table as (header, rows of strings), the same in the terminal and the HTML."""
    header = ["server", "subscribers", "held", "heap B/sub", "RSS B/sub", "commits", "deliveries/s", "delivered %",
              "p50 ms", "p99 ms", "max ms", "lost/sub", "gaps", "dropped", "reloads", "CPU us/delivery",
              "server CPU %", "client CPU %", "client/server CPU", "/updates p99 ms"]
    if settings.vps:
        header += ["cgroup peak MB", "OOM kills"]
    cells = []
    for r in rows:
        line = [r["server"], f"{r['subscribers']}*" if r["cap_reason"] else str(r["subscribers"]), fmt(r["held"]),
                fmt(r["heap_bytes_per_sub"]), fmt(r["rss_bytes_per_sub"]), fmt(r["commits"]),
                fmt(r["deliveries_per_s"]), fmt(r["delivered_pct"], 1), fmt(r["p50_ms"], 1), fmt(r["p99_ms"], 1),
                fmt(r["max_ms"], 1), fmt(r["lost_per_sub"], 2), fmt(r["gaps"]), fmt(r["dropped"]), fmt(r["reloads"]),
                fmt(r["cpu_us_per_delivery"], 2), fmt(r["server_cpu_pct"]), fmt(r["client_cpu_pct"]),
                fmt(r["client_cpu_share"], 2), fmt(r["publish_answer_ms_p99"], 1)]
        if settings.vps:
            line += [fmt(r["cgroup_peak_mb"]), fmt(r["cgroup_oom_kills"])]
        cells.append(line)
    return header, cells


def print_fanout_table(settings, rows, note_lines):
    header, cells = fanout_table(settings, rows)
    widths = [max(len(str(x)) for x in col) for col in zip(header, *cells)]
    line = lambda cs: "  ".join(str(c).rjust(w) if i > 0 else str(c).ljust(w) for i, (c, w) in enumerate(zip(cs, widths)))
    print()
    print(f"Fan-out: GET /updates/events subscribers, {settings.fanout_rate} commits/s (GET /updates?queries=1) for "
          f"{settings.duration_s} s; heap up to {settings.heap}; {settings.fanout_processes or '?'} client "
          f"process(es) ({settings.client_version or settings.fanout_client or 'client unknown'}); {settings.pinning}; "
          "one row per server, count and round")
    if settings.vps:
        print(f"--vps: {settings.vps}")
    if settings.jars:
        print(f"Jars: {settings.jars}")
    print(line(header))
    print(line(["-" * w for w in widths]))
    for c in cells:
        print(line(c))
    for n in note_lines:
        print("Note: " + n)


FANOUT_FIELDS = ["server", "round", "requested", "subscribers", "cap_reason", "held", "client_processes", "connect_s",
                 "connect_errors", "established", "heap_bytes_per_sub", "rss_bytes_per_sub", "heap_before_mb",
                 "heap_after_mb", "rss_before_mb", "rss_after_mb", "rate", "duration_s", "warmup_commits",
                 "warmup_last_id", "sent", "commits",
                 "publish_failures", "publish_s", "publish_late", "commits_per_s",
                 "publish_answer_ms_p50", "publish_answer_ms_p99", "publish_answer_ms_max", "drain_s", "wall_s",
                 "expected", "received", "delivered_pct", "deliveries_per_s", "target_per_s", "events_per_chunk",
                 "p50_ms", "p99_ms", "max_ms", "negative", "lost", "lost_per_sub", "gaps", "gaps_per_sub",
                 "subscribers_with_gaps", "duplicates", "missed_before_first", "missed_after_last", "silent", "reloads",
                 "other_events", "malformed", "dropped", "end_errors", "per_subscriber_min", "per_subscriber_max",
                 "server_cpu_s", "cpu_us_per_delivery", "server_cpu_pct", "client", "client_cpu_s", "client_cpu_pct",
                 "client_cpu_share", "client_rss_mb",
                 "rss_peak_mb", "cgroup_peak_mb", "cgroup_oom_kills", "server_alive", "log_problem_lines",
                 "client_errors", "error", "latency_histogram"]


def write_fanout(d, draw_fanout=None):
    settings = records.read_settings(d)
    runs = records.read(d, records.FANOUT, records.FanoutRun)
    if not runs:
        print(f"report: {d} holds no {records.FANOUT} records", file=sys.stderr)
        return 1
    order = {name: i for i, name in enumerate(settings.servers)}
    rows = sorted((fanout_row(r, settings.clk_tck) for r in runs),
                  key=lambda r: (order.get(r["server"], 99), r["subscribers"], r["round"]))
    note_lines = fanout_notes(settings, rows, records.read(d, records.PROBLEMS, records.Problem))
    write_csv(d / "fanout.csv", rows, FANOUT_FIELDS)
    (d / "fanout.json").write_text(json.dumps({"settings": asdict(settings), "notes": note_lines, "fanout": rows},
                                              indent=2) + "\n")
    files = ["fanout.csv", "fanout.json"]
    if draw_fanout:
        files += draw_fanout(d, settings, rows, note_lines)
    print_fanout_table(settings, rows, note_lines)
    print()
    print(f"Report: {d}/  ({', '.join(files)}; latency histograms, client results and heap histograms in raw/, "
          "server logs in logs/)")
    return 0


# ---------------------------------------------------------------------------------------------
# The report and its command
# ---------------------------------------------------------------------------------------------
def write(d, draw_sweep=None, draw_memory=None, draw_fanout=None):
    """Writes the report of results directory `d` and prints its table; returns the exit status (1: no
    records). The charts come from the callers that pass them in (kiln_sweep.charts):
    draw_sweep(d, settings, summary, runs, after_rows, note_lines, pinning_rows) and
    draw_memory(d, settings, rows, note_lines) and draw_fanout(d, settings, rows, note_lines) write theirs
    into `d` and return the file names."""
    d = Path(d)
    mode = records.read_settings(d).mode
    if mode == "memory":
        return write_memory(d, draw_memory)
    if mode == "fanout":
        return write_fanout(d, draw_fanout)
    settings, runs, after, problems = load(d)
    if not runs:
        print(f"report: {d} holds no timed runs", file=sys.stderr)
        return 1
    summary = summarize(settings, runs)
    after_rows = summarize_after(settings, runs, after)
    note_lines = notes(settings, runs, problems)
    pinning_rows = summarize_pinning(settings, runs)
    profile_rows = summarize_profiles(settings, runs)
    write_csv(d / "runs.csv", runs, RUN_FIELDS)
    write_csv(d / "summary.csv", summary, summary_fields(settings))
    doc = {"settings": asdict(settings), "notes": note_lines, "summary": summary,
           "round_trips": round_trips(summary) if settings.mode == "latency" else [],
           "after_sweep": after_rows, "after_sweep_per_round": after, "pinning": pinning_rows,
           "profiles": profile_rows, "runs": runs}
    (d / "summary.json").write_text(json.dumps(doc, indent=2) + "\n")
    files = ["runs.csv", "summary.csv", "summary.json"]
    if draw_sweep:
        files += draw_sweep(d, settings, summary, runs, after_rows, note_lines, pinning_rows)
    print_table(settings, summary, after_rows, note_lines, pinning_rows, profile_rows)
    print()
    print(f"Report: {d}/  ({', '.join(files)}; raw outputs in raw/, server logs in logs/)")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m kiln_sweep.report", description=__doc__.split("\n\n")[0])
    p.add_argument("results_dir")
    return write(p.parse_args(argv).results_dir)


if __name__ == "__main__":
    sys.exit(main())
