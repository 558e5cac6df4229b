"""A real `./ab-sweep.sh kilim --quick` (dummy, nginx, netty and kilim on loopback, about a minute): its files
hold the measured numbers, its chart is drawn, its HTML report renders in headless Chromium, and a
path the server does not serve fails clearly."""

import csv
import json
import re
import shutil
import subprocess
import time

import pytest

from conftest import ROOT, ab_sweep
from kiln_sweep import measure, records

PIL = pytest.importorskip("PIL.Image", reason="the venv's pillow (sweep/requirements.txt) reads the images")

SERVERS = ("dummy", "nginx", "netty", "kilim")


def test_quick_sweep_runs(quick_sweep):
    out, done = quick_sweep
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Report: " in done.stdout


def test_outputs_hold_the_measured_numbers(quick_sweep):
    d, _ = quick_sweep
    for f in ("settings.json", "runs.jsonl", "after.jsonl", "runs.csv", "summary.csv", "summary.json", "chart.png",
              "chart.svg", "report.html", "commands.log"):
        assert (d / f).stat().st_size > 0, f"{f} missing or empty in {d}"
    runs = list(csv.DictReader(open(d / "runs.csv")))
    doc = json.loads((d / "summary.json").read_text())
    html = (d / "report.html").read_text()
    assert {(r["server"], r["concurrency"]) for r in runs} == {(s, c) for s in SERVERS for c in ("10", "100")}
    for r in runs:
        # The CSV's req/s is what ab printed in the raw output it names.
        raw = (d / r["raw"]).read_text()
        ab_rps = float(re.search(r"Requests per second:\s+([\d.]+)", raw).group(1))
        assert abs(float(r["rps"]) - ab_rps) < 0.01, (r["raw"], r["rps"], ab_rps)
        assert r["ok"] == "yes" and int(r["failures"]) == 0, r
        assert float(r["server_cpu_us_per_request"]) > 0 and float(r["rss_peak_mb"]) > 0, r
    assert {s["server"] for s in doc["summary"]} == set(SERVERS)
    for s in doc["summary"]:
        assert s["rps_median"] and s["rps_median"] > 0, s
        # the HTML table shows the same median, formatted as in the terminal table
        assert f"<td>{s['rps_median']:,.0f}</td>" in html, f"{s['server']} c={s['concurrency']} not in report.html"
        if s["server"] == "kilim":
            assert s["rps_vs_dummy"] and s["rps_vs_nginx"] and s["cpu_vs_dummy"] and s["cpu_vs_netty"], s
    assert len(list(csv.DictReader(open(d / "summary.csv")))) == 2 * len(SERVERS)
    # Self-contained: plotly.js inlined, nothing loaded from elsewhere.
    assert "Plotly.newPlot" in html, "no plotly charts"
    assert not re.search(r"<script[^>]*\bsrc=|<link[^>]*\bhref=[\"']?https?:", html), "report loads files from elsewhere"


def test_records_are_typed_and_complete(quick_sweep):
    d, _ = quick_sweep
    settings = records.read_settings(d)
    assert settings.servers == list(SERVERS) and settings.quick and settings.steps_requested == [10, 100]
    runs = records.read(d, records.RUNS, records.TimedRun)
    assert len(runs) == 2 * len(SERVERS) and all(r.server_alive and r.client_rc == 0 and r.rss_hwm_kb > 0 for r in runs)
    after = records.read(d, records.AFTER, records.AfterWindow)
    assert [a.server for a in after] == list(SERVERS) and all(len(a.cpu_pct_per_second) == 2 for a in after)
    assert records.read(d, records.PROBLEMS, records.Problem) == []


def test_memory_panel_shows_peak_rss_per_step_per_server(quick_sweep):
    d, _ = quick_sweep
    html = (d / "report.html").read_text()
    assert 'id="chart-rss"' in html and "Memory: peak server RSS per step" in html
    svg = (d / "chart.svg").read_text()
    assert "peak server RSS, MB" in svg and "JVM heap -Xmx256m" in svg


def test_chart_png_is_a_chart(quick_sweep):
    d, _ = quick_sweep
    img = PIL.open(d / "chart.png").convert("RGB")
    w, h = img.size
    assert w >= 800 and h >= 600, img.size
    colors = img.getcolors(maxcolors=1 << 20)
    assert len(colors) > 50, f"only {len(colors)} colours: blank?"
    non_white = sum(n for n, c in colors if sum(c) < 720)
    assert non_white / (w * h) > 0.02, f"{non_white / (w * h):.3%} non-white pixels: blank?"


def test_report_regenerates_from_the_records(quick_sweep, tmp_path):
    d, _ = quick_sweep
    copy = tmp_path / "copy"
    shutil.copytree(d, copy, ignore=shutil.ignore_patterns("runs.csv", "summary.*", "chart.*", "report.html"))
    done = ab_sweep("--report", copy, "--no-install")
    assert done.returncode == 0, done.stderr
    for f in ("runs.csv", "summary.csv", "summary.json", "chart.png", "report.html"):
        assert (copy / f).is_file(), f
    assert (copy / "summary.csv").read_text() == (d / "summary.csv").read_text()


# The report as a person sees it: headless Chromium, flags per the machine notes (no network).
CHROMIUM = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
            "--no-first-run", "--disable-component-update", "--disable-sync", "--enable-logging=stderr", "--v=0",
            "--virtual-time-budget=10000"]


def test_html_report_renders_in_chromium(quick_sweep, tmp_path):
    d, _ = quick_sweep
    url = f"file://{d}/report.html"
    dom = subprocess.run([*CHROMIUM, f"--user-data-dir={tmp_path}/dom", "--dump-dom", url], capture_output=True,
                         text=True, timeout=120, check=False)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert 'data-render="ok"' in dom.stdout, re.findall(r'id="render-status"[^<]*', dom.stdout)
    assert dom.stdout.count('class="main-svg"') >= 4, "fewer than 4 plotly SVG layers in the DOM"
    # Console messages (script errors included) reach stderr as INFO:CONSOLE lines.
    assert ":CONSOLE" not in dom.stderr, dom.stderr[-2000:]
    shot = subprocess.run([*CHROMIUM, f"--user-data-dir={tmp_path}/shot", "--window-size=1280,1600",
                           f"--screenshot={tmp_path}/report.png", url], capture_output=True, text=True, timeout=120,
                          check=False)
    assert shot.returncode == 0, shot.stderr[-2000:]
    img = PIL.open(tmp_path / "report.png").convert("RGB")
    w, h = img.size
    # The first chart sits below the title: its plot area is plotly's light blue-grey (#E5ECF6) and
    # its lines are saturated colours. A blank or unstyled page has neither.
    colors = img.crop((0, 0, w, min(h, 900))).getcolors(maxcolors=1 << 20)
    plot_bg = sum(n for n, c in colors if c == (229, 236, 246))
    saturated = sum(n for n, c in colors if max(c) - min(c) > 100)
    assert plot_bg > 50000, f"only {plot_bg} plot-background pixels: chart not drawn"
    assert saturated > 500, f"only {saturated} saturated pixels: no lines drawn"
    assert len(colors) > 100, f"only {len(colors)} colours"


def test_a_path_the_server_does_not_serve_fails_clearly(quick_sweep, tmp_path):
    # After the quick sweep (the fixture) so the jar is built; --no-build keeps it so.
    done = ab_sweep("kilim", "--quick", "--no-anchors", "--no-install", "--no-build", "--path", "/no-such-endpoint",
                    "--out", tmp_path / "badpath")
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "kilim answered GET /no-such-endpoint with '404', not 2xx" in out and "no step was measured" in out
    [problem] = records.read(tmp_path / "badpath", records.PROBLEMS, records.Problem)
    assert problem.server == "kilim" and "404" in problem.message


def test_sigterm_stops_the_server_and_keeps_what_was_measured(quick_sweep, tmp_path):
    # After the quick sweep (the fixture): one load on this machine at a time.
    out = tmp_path / "stopped"
    proc = subprocess.Popen([str(ROOT / "ab-sweep.sh"), "dummy", "--quick", "--no-anchors", "--no-install", "--out",
                             str(out)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (out / records.RUNS).is_file() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.terminate()
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stdout + stderr
    assert f"stopped early; the steps measured so far are in {out}" in stderr
    pid = int(re.search(r"dummy listening on \S+ \(pid (\d+)\)", stdout).group(1))
    assert not measure.alive(pid), "the server outlived the sweep"
    assert len(records.read(out, records.RUNS, records.TimedRun)) >= 1
