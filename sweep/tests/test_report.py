"""The report's rules on records like a sweep writes them: failures without Length, ratios per round,
capped labels, CPU per request, failed runs left out, CSV and JSON without the chart libraries."""

import json
import re

import pytest

from conftest import DATA
from kiln_sweep import charts, records, report
from kiln_sweep.records import Problem, Settings, TimedRun


def ab_output(rps, complete):
    """A real ab report (testdata/ab-ok.txt) with its rate and count replaced."""
    text = (DATA / "ab-ok.txt").read_text()
    text = re.sub(r"(?m)^Requests per second:\s+[\d.]+", f"Requests per second:    {rps:.2f}", text)
    return re.sub(r"(?m)^Complete requests:\s+\d+", f"Complete requests:      {complete}", text)


def settings(mode="sweep"):
    return Settings(date="2026-11-23T07:00:00+00:00", mode=mode, quick=False, servers=["dummy", "nginx", "kilim"],
                    anchors=True, path="/hello", client="ab", rounds=3, duration_s=10, steps_requested=[1000],
                    heap="256m", pinning="server on CPU 0, client on CPU 1", nofile_soft_start="20000",
                    nofile_soft="20000", nofile_hard="20000", clk_tck=100, idle_threshold_pct=5, after_window_s=3,
                    requests_per_connection_min=25)


class ResultsDir:
    """Writes a results directory as a sweep does: settings.json and one record per line."""

    def __init__(self, path, mode="sweep"):
        self.dir = path
        (path / "raw").mkdir()
        records.write_settings(path, settings(mode))
        records.append(path, records.AFTER, records.AfterWindow(1, "kilim", 3, [90, 40, 0]))

    def run(self, rnd, server, rps, complete=10000, step=1, requested=1000, ran=1000, reason="", ticks=100,
            wall=10.0, client_ms=5000, hwm_kb=102400, idle=True, alive=True, rc=0):
        raw = f"raw/r{rnd}-{server}-c{ran}.txt"
        (self.dir / raw).write_text(ab_output(rps, complete))
        records.append(self.dir, records.RUNS, TimedRun(
            round=rnd, server=server, step=step, requested=requested, concurrency=ran, cap_reason=reason, raw=raw,
            warmup_raw=raw, client_rc=rc, requests_limit=50000, time_limit_s=30, wall_s=wall,
            server_cpu_ticks=ticks, client_user_ms=client_ms, client_sys_ms=0, rss_hwm_kb=hwm_kb, rss_kb=hwm_kb,
            idle_wait_s=0.0, idle_reached=idle, server_alive=alive))

    def load(self):
        return report.load(self.dir)


def test_ratio_to_anchor_is_the_median_of_same_round_ratios(tmp_path):
    d = ResultsDir(tmp_path)
    for rnd, dummy, kilim in ((1, 100.0, 50.0), (2, 200.0, 40.0), (3, 50.0, 45.0)):
        d.run(rnd, "dummy", dummy)
        d.run(rnd, "kilim", kilim)
    s, runs, _, _ = d.load()
    row = next(r for r in report.summarize(s, runs) if r["server"] == "kilim")
    # per round 0.5, 0.2, 0.9 -> 0.5; the ratio of the medians would be 45/100 = 0.45
    assert row["rps_vs_dummy"] == pytest.approx(0.5)
    assert row["rps_median"] == 45.0
    assert row["rps_vs_nginx"] is None, "no nginx run: no ratio rather than a made-up one"


def test_cpu_per_request_and_utilisation_from_ticks(tmp_path):
    d = ResultsDir(tmp_path)
    d.run(1, "kilim", 1000.0, complete=5000, ticks=100, wall=2.0, client_ms=1900)
    _, runs, _, _ = d.load()
    r = runs[0]
    assert r["server_cpu_us_per_request"] == pytest.approx(200.0)  # 1 s of CPU / 5000 requests
    assert r["server_cpu_pct"] == pytest.approx(50.0)  # 1 s of CPU in 2 s
    assert r["client_cpu_pct"] == pytest.approx(95.0)
    assert r["client_saturated"]
    assert r["rss_peak_mb"] == pytest.approx(100.0)


def test_peak_rss_per_step_is_the_maximum_over_rounds(tmp_path):
    d = ResultsDir(tmp_path)
    for rnd, kb in ((1, 102400), (2, 307200), (3, 204800)):
        d.run(rnd, "kilim", 1000.0, hwm_kb=kb)
    d.run(1, "kilim", 1000.0, step=2, requested=2000, ran=2000, hwm_kb=0)
    s, runs, _, _ = d.load()
    rows = report.summarize(s, runs)
    assert rows[0]["rss_peak_mb_max"] == pytest.approx(300.0)
    assert rows[1]["rss_peak_mb_max"] is None, "a server gone at the end of the step has no reading, not 0 MB"


def test_capped_step_is_labelled_with_what_ran(tmp_path):
    d = ResultsDir(tmp_path)
    d.run(1, "kilim", 1000.0, requested=20000, ran=19500, reason="open-files limit 20000")
    s, runs, _, problems = d.load()
    row = report.summarize(s, runs)[0]
    notes = report.notes(s, runs, problems)
    assert row["concurrency"] == 19500
    assert row["label"] == "requested 20000, ran 19500: open-files limit 20000"
    assert "19500* is a capped step: requested 20000, ran 19500: open-files limit 20000." in notes
    _, rows = report.table_rows(s, [row])
    assert rows[0][1] == "19500*", "the table shows what ran, never the requested 20000"


def test_failed_client_run_is_left_out_and_reported(tmp_path):
    d = ResultsDir(tmp_path)
    d.run(1, "kilim", 1000.0)
    d.run(2, "kilim", 3000.0, rc=24)
    (d.dir / "raw/r2-kilim-c1000.txt").write_text((DATA / "ab-aborted.txt").read_text())
    (d.dir / "raw/r2-kilim-c1000.txt.err").write_text("socket: Too many open files (24)\n")
    records.append(d.dir, records.PROBLEMS, Problem(3, "kilim", "kilim exited before it was ready (log: x)"))
    s, runs, _, problems = d.load()
    row = report.summarize(s, runs)[0]
    notes = report.notes(s, runs, problems)
    assert "Round 3: kilim exited before it was ready (log: x)" in notes
    assert (row["rounds"], row["rounds_ok"], row["rps_median"]) == (2, 1, 1000.0)
    assert any("Too many open files" in n for n in notes)


def test_busy_server_and_dead_server_are_noted(tmp_path):
    d = ResultsDir(tmp_path)
    d.run(1, "kilim", 1000.0, idle=False, alive=False)
    s, runs, _, problems = d.load()
    notes = report.notes(s, runs, problems)
    assert any("still busy (CPU >= 5%)" in n for n in notes)
    assert any("the server died during this step" in n for n in notes)


def test_report_writes_csv_and_json_without_charts(tmp_path):
    d = ResultsDir(tmp_path)
    d.run(1, "dummy", 100.0)
    d.run(1, "kilim", 50.0)
    assert report.main([str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "summary.json").read_text())
    summary_csv = (tmp_path / "summary.csv").read_text()
    assert [r["server"] for r in doc["summary"]] == ["dummy", "kilim"]
    assert doc["after_sweep"][0]["cpu_pct_max"] == 90
    assert doc["settings"]["servers"] == ["dummy", "nginx", "kilim"]
    assert "kilim,1000,1000,,1,1,50.000,0," in summary_csv
    assert not (tmp_path / "report.html").exists()


def test_records_round_trip_and_unknown_fields_are_refused(tmp_path):
    d = ResultsDir(tmp_path)
    d.run(1, "kilim", 50.0)
    [run] = records.read(tmp_path, records.RUNS, TimedRun)
    assert run.server == "kilim" and run.idle_reached is True and run.wall_s == 10.0
    assert records.read_settings(tmp_path) == settings()
    (tmp_path / records.RUNS).write_text(json.dumps({"round": 1, "no_such_field": 2}) + "\n")
    with pytest.raises(TypeError):
        records.read(tmp_path, records.RUNS, TimedRun)


def test_heap_sizes_read_as_the_jvm_reads_them():
    assert [charts.heap_mb(h) for h in ("256m", "1g", "1G", "524288k", "1048576")] == [256, 1024, 1024, 512, 1]


def test_the_charts_add_their_files_to_the_same_report(tmp_path, capsys):
    d = ResultsDir(tmp_path)
    d.run(1, "dummy", 100.0)
    d.run(1, "kilim", 50.0)
    assert charts.main([str(tmp_path)]) == 0
    assert "(runs.csv, summary.csv, summary.json, chart.png, chart.svg, report.html;" in capsys.readouterr().out
    assert "Plotly.newPlot" in (tmp_path / "report.html").read_text()
    assert (tmp_path / "chart.png").stat().st_size > 0 and (tmp_path / "chart.svg").stat().st_size > 0
