"""The report's charts: chart.png/chart.svg (matplotlib) and the self-contained report.html (plotly,
Jinja2), drawn into the report that kiln_sweep.report writes.

    sweep/.venv/bin/python -m kiln_sweep.charts RESULTS_DIR

This is the one module that needs the venv's libraries (sweep/requirements.txt); no other module of
the sweep imports it, so the sweep itself runs on the standard library alone (kiln_sweep.charts_venv
runs this command in a child process when the venv is there)."""

import argparse
import sys
from pathlib import Path

import jinja2
import matplotlib
import matplotlib.pyplot as plt
import plotly.graph_objects as go
import plotly.io as pio
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from kiln_sweep.pinning import EVENT
from kiln_sweep.report import FANOUT_FIELDS, RUN_FIELDS, TOP_CLASSES, fanout_table, fmt, pinning_text, round_trips, \
    table_rows, write

# No display: draw into files.
matplotlib.use("Agg")


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


def heap_mb(heap):
    """A JVM size (256m, 1g, 524288k, bytes) in MB."""
    scale = {"k": 1 / 1024, "m": 1, "g": 1024}.get(heap[-1].lower())
    return float(heap[:-1]) * scale if scale else int(heap) / 1048576


def chart_png(settings, summary, out_png, out_svg):
    latency = settings.mode == "latency"
    servers = list(dict.fromkeys(s["server"] for s in summary))
    colors = {srv: plt.get_cmap("tab10")(i % 10) for i, srv in enumerate(servers)}
    fig, (top, middle, bottom) = plt.subplots(3, 1, figsize=(11, 12), sharex=True, height_ratios=[3, 2, 2])
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
        middle.plot(x, _gaps(y), marker="o", color=colors[srv], label=srv)
        x, y, _ = _series(summary, srv, "rss_peak_mb_max")
        bottom.plot(x, _gaps(y), marker="o", color=colors[srv], label=srv)
    middle.set_ylabel("server CPU, us/request (median)")
    middle.set_ylim(bottom=0)
    # Memory is what a small VPS runs out of first: the peak resident set beside the Java heap limit.
    bottom.axhline(heap_mb(settings.heap), color="grey", linestyle="--", linewidth=1,
                   label=f"JVM heap -Xmx{settings.heap}")
    bottom.set_ylabel("peak server RSS, MB (VmHWM, max)")
    bottom.set_ylim(0, max([heap_mb(settings.heap)] + [s["rss_peak_mb_max"] or 0 for s in summary]) * 1.15)
    bottom.legend(fontsize=8, ncol=4, loc="best")
    bottom.set_xlabel("concurrent keep-alive connections" + ("  (* capped: see the report)" if any(s["cap_reason"] for s in summary) else ""))
    bottom.set_xticks(ticks)
    bottom.set_xticklabels(tick_labels, rotation=30 if len(ticks) > 6 else 0)
    for ax in (top, middle, bottom):
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"kiln {'latency' if latency else 'sweep'}: GET {settings.path} with {settings.client}, {settings.pinning}, "
                 f"heap {settings.heap}\n{settings.date}, {settings.rounds} round(s), "
                 f"{settings.cpu_model}", fontsize=10)
    fig.tight_layout()
    fig.savefig(out_png, dpi=110)
    fig.savefig(out_svg)
    plt.close(fig)


def plotly_figures(settings, summary):
    """The interactive charts: one legend group per server, so a click toggles all its lines."""
    latency = settings.mode == "latency"
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
            ("rss_peak_mb_max", "Memory: peak server RSS per step (VmHWM, max over rounds)", "MB", "rss")):
        if latency and name == "p99":
            continue
        f = go.Figure()
        for srv in servers:
            x, y, rows = _series(summary, srv, key)
            f.add_trace(go.Scatter(x=x, y=y, name=srv, legendgroup=srv, mode="lines+markers",
                                   line=dict(color=colors[srv]), customdata=custom(rows), hovertemplate=hover))
        axis(f, title)
        f.update_yaxes(title_text=unit, rangemode="tozero")
        if name == "rss":
            # Memory is what a small VPS runs out of first: the peak resident set beside the heap limit.
            f.add_hline(y=heap_mb(settings.heap), line_dash="dash", line_color="grey",
                        annotation_text=f"JVM heap -Xmx{settings.heap}", annotation_position="top left")
        figs.append((name, f))
    return figs


# The settings table of report.html, in this order.
SETTINGS_SHOWN = ["path", "client", "client_version", "wrk_threads", "pinning", "vps", "heap", "java", "nginx", "rounds",
                  "duration_s", "requests_per_connection_min", "steps_requested", "plan_notes", "nofile_soft_start",
                  "nofile_soft", "nofile_hard", "idle_threshold_pct", "after_window_s", "kernel", "cpu_model", "cpus",
                  "memory", "commit", "date"]


def _text(value):
    if isinstance(value, list):
        return "; ".join(map(str, value)) if value and isinstance(value[0], str) else ",".join(map(str, value))
    return "" if value is None else str(value)


def report_html(settings, summary, runs, after_rows, note_lines, out_html, pinning_rows=()):
    figs = plotly_figures(settings, summary)
    charts = []
    for i, (name, fig) in enumerate(figs):
        # plotly.js is inlined once, in the first chart: the page works offline, without a CDN.
        charts.append(pio.to_html(fig, full_html=False, include_plotlyjs=(i == 0), div_id=f"chart-{name}",
                                  config={"displaylogo": False, "responsive": True}))
    header, rows = table_rows(settings, summary)
    shown = [(key, _text(getattr(settings, key))) for key in SETTINGS_SHOWN]
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent), autoescape=True)
    html = env.get_template("report.html.j2").render(
        settings=settings, settings_rows=[(k, v) for k, v in shown if v], charts=charts, header=header, rows=rows, summary=summary, runs=runs,
        round_trips=round_trips(summary) if settings.mode == "latency" else [],
        after_rows=after_rows, notes=note_lines, fmt=fmt, run_fields=RUN_FIELDS,
        pinning_rows=[dict(p, text=pinning_text(p, settings.pinned_threshold_ms)) for p in pinning_rows],
        pinned_event=EVENT)
    Path(out_html).write_text(html)


def memory_html(settings, rows, note_lines, out_html):
    """--memory's report.html: the bytes-per-connection table and each server's top classes."""
    shown = [(key, _text(getattr(settings, key))) for key in SETTINGS_SHOWN + ["memory_extra"]
             if key not in ("client", "client_version", "wrk_threads", "duration_s", "requests_per_connection_min",
                            "idle_threshold_pct", "after_window_s")]
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent), autoescape=True)
    html = env.get_template("memory.html.j2").render(settings=settings, settings_rows=[(k, v) for k, v in shown if v],
                                                      rows=rows, notes=note_lines, fmt=fmt, top=TOP_CLASSES)
    Path(out_html).write_text(html)


def draw_sweep(d, settings, summary, runs, after_rows, note_lines, pinning_rows):
    """A sweep's chart.png, chart.svg and report.html in `d`; the names of the files written."""
    chart_png(settings, summary, d / "chart.png", d / "chart.svg")
    report_html(settings, summary, runs, after_rows, note_lines, d / "report.html", pinning_rows)
    return ["chart.png", "chart.svg", "report.html"]


def draw_memory(d, settings, rows, note_lines):
    """--memory's report.html in `d`; the names of the files written."""
    memory_html(settings, rows, note_lines, d / "report.html")
    return ["report.html"]


# ---------------------------------------------------------------------------------------------
# --subscribers: the fan-out benchmark
# ---------------------------------------------------------------------------------------------
FANOUT_CHARTS = (("p99_ms", "p99 latency, commit to receipt", "ms", True),
                 ("cpu_us_per_delivery", "Server CPU per delivery", "us/delivery", False),
                 ("deliveries_per_s", "Deliveries per second (publish + drain)", "events/s", False),
                 ("heap_bytes_per_sub", "Heap per idle subscriber (live, after a full GC)", "bytes", False))


def _fanout_series(rows, server, key):
    """(subscribers, value) of one server's rows, in order; a count measured in several rounds is the
    median of them."""
    by_n = {}
    for r in rows:
        if r["server"] == server and r[key] is not None:
            by_n.setdefault(r["subscribers"], []).append(r[key])
    xs = sorted(by_n)
    return xs, [sorted(by_n[x])[len(by_n[x]) // 2] for x in xs]


def fanout_png(settings, rows, out_png, out_svg):
    """fanout.png/svg: p99 latency and CPU per delivery by subscriber count, one line per server."""
    servers = list(dict.fromkeys(r["server"] for r in rows))
    colors = {srv: plt.get_cmap("tab10")(i % 10) for i, srv in enumerate(servers)}
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 8), sharex=True)
    for srv in servers:
        x, y = _fanout_series(rows, srv, "p99_ms")
        top.plot(x, y, marker="o", color=colors[srv], label=f"{srv} p99")
        x, y = _fanout_series(rows, srv, "p50_ms")
        top.plot(x, y, marker="x", linestyle=":", color=colors[srv], label=f"{srv} p50")
        x, y = _fanout_series(rows, srv, "cpu_us_per_delivery")
        bottom.plot(x, y, marker="o", color=colors[srv], label=srv)
    top.set_ylabel("commit-to-receipt latency, ms (log)")
    top.set_yscale("log")
    top.legend(fontsize=8, ncol=2)
    bottom.set_ylabel("server CPU, us per delivery")
    bottom.set_ylim(bottom=0)
    bottom.legend(fontsize=8)
    ticks = sorted({r["subscribers"] for r in rows})
    capped = {r["subscribers"] for r in rows if r["cap_reason"]}
    bottom.set_xticks(ticks)
    bottom.set_xticklabels([f"{t}*" if t in capped else str(t) for t in ticks])
    bottom.set_xlabel("subscribers (GET /updates/events)")
    for ax in (top, bottom):
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"kiln fan-out: {settings.fanout_rate} commits/s for {settings.duration_s} s, {settings.pinning}"
                 + (", --vps" if settings.vps else "") + f"\n{settings.date}, {settings.cpu_model}", fontsize=10)
    fig.tight_layout()
    fig.savefig(out_png, dpi=110)
    fig.savefig(out_svg)
    plt.close(fig)


def fanout_html(settings, rows, note_lines, out_html):
    servers = list(dict.fromkeys(r["server"] for r in rows))
    colors = {srv: qualitative.Plotly[i % len(qualitative.Plotly)] for i, srv in enumerate(servers)}
    charts = []
    for i, (key, title, unit, log) in enumerate(FANOUT_CHARTS):
        f = go.Figure()
        for srv in servers:
            x, y = _fanout_series(rows, srv, key)
            f.add_trace(go.Scatter(x=x, y=y, name=srv, mode="lines+markers", line=dict(color=colors[srv]),
                                   hovertemplate=f"{srv}: %{{x}} subscribers, %{{y:,.2f}} {unit}<extra></extra>"))
        f.update_layout(title=title, xaxis_title="subscribers", yaxis_title=unit, height=380,
                        margin=dict(l=60, r=20, t=50, b=50))
        f.update_yaxes(type="log" if log else "linear", rangemode=None if log else "tozero")
        charts.append(pio.to_html(f, full_html=False, include_plotlyjs=(i == 0), div_id=f"chart-{key}",
                                  config={"displaylogo": False, "responsive": True}))
    header, cells = fanout_table(settings, rows)
    shown = [(key, _text(getattr(settings, key))) for key in SETTINGS_SHOWN + ["jars", "fanout_rate", "fanout_processes"]
             if key not in ("path", "client", "wrk_threads", "requests_per_connection_min", "idle_threshold_pct",
                            "after_window_s")]
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent), autoescape=True)
    html = env.get_template("fanout.html.j2").render(
        settings=settings, settings_rows=[(k, v) for k, v in shown if v], charts=charts, header=header, cells=cells,
        rows=rows, notes=note_lines, fmt=fmt, fields=FANOUT_FIELDS)
    Path(out_html).write_text(html)


def draw_fanout(d, settings, rows, note_lines):
    """--subscribers' fanout.png, fanout.svg and report.html in `d`; the names of the files written."""
    fanout_png(settings, rows, d / "fanout.png", d / "fanout.svg")
    fanout_html(settings, rows, note_lines, d / "report.html")
    return ["fanout.png", "fanout.svg", "report.html"]


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m kiln_sweep.charts",
                                description="The report of a results directory with its charts.")
    p.add_argument("results_dir")
    return write(p.parse_args(argv).results_dir, draw_sweep, draw_memory, draw_fanout)


if __name__ == "__main__":
    sys.exit(main())
