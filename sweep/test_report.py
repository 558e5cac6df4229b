"""Unit tests for sweep/report.py: parsing real ab and wrk outputs (sweep/testdata/) and the summary
rules (failures without Length, ratios per round, capped labels, CPU per request).
Run: python3 -m unittest discover -s sweep -p 'test_report.py'"""

import json
import re
import tempfile
import unittest
from pathlib import Path

import report

DATA = Path(__file__).parent / "testdata"

RUN_HEADER = ("round\tserver\tstep\trequested\tconcurrency\tcap_reason\traw\twarmup_raw\tclient_rc\trequests_limit\t"
              "time_limit_s\twall_s\tserver_cpu_ticks\tclient_user_ms\tclient_sys_ms\trss_hwm_kb\trss_kb\t"
              "idle_wait_s\tidle_reached\tserver_alive")


def ab_output(rps, complete):
    """A real ab report (testdata/ab-ok.txt) with its rate and count replaced."""
    text = (DATA / "ab-ok.txt").read_text()
    text = re.sub(r"(?m)^Requests per second:\s+[\d.]+", f"Requests per second:    {rps:.2f}", text)
    return re.sub(r"(?m)^Complete requests:\s+\d+", f"Complete requests:      {complete}", text)


class ResultsDir:
    """Writes a minimal results directory like ab-sweep.sh does."""

    def __init__(self, tmp, mode="sweep"):
        self.dir = Path(tmp)
        (self.dir / "raw").mkdir()
        self.rows = []
        (self.dir / "settings.tsv").write_text(
            f"mode\t{mode}\nclient\tab\nrounds\t3\nservers\tdummy nginx kilim\nclk_tck\t100\npath\t/hello\n")

    def run(self, rnd, server, rps, complete=10000, step=1, requested=1000, ran=1000, reason="", ticks=100,
            wall=10.0, client_ms=5000, hwm_kb=102400, idle="1", alive="1", rc=0):
        raw = f"raw/r{rnd}-{server}-c{ran}.txt"
        (self.dir / raw).write_text(ab_output(rps, complete))
        self.rows.append("\t".join(str(x) for x in (
            rnd, server, step, requested, ran, reason, raw, raw, rc, 50000, 30, f"{wall:.3f}", ticks, client_ms, 0,
            hwm_kb, hwm_kb, "0.0", idle, alive)))

    def load(self):
        (self.dir / "runs.tsv").write_text(RUN_HEADER + "\n" + "\n".join(self.rows) + "\n")
        (self.dir / "after.tsv").write_text("round\tserver\twindow_s\tcpu_pct_per_second\n1\tkilim\t3\t90,40,0\n")
        return report.load(self.dir)


class ParseAb(unittest.TestCase):
    def test_reads_rate_count_and_percentiles_to_the_microsecond(self):
        m = report.parse_client_output(DATA / "ab-ok.txt", "ab")
        self.assertEqual(m["complete"], 5000)
        self.assertAlmostEqual(m["rps"], 27302.26)
        self.assertEqual(m["failures"], 0)
        self.assertAlmostEqual(m["mean_ms"], 0.733)
        csv_p50 = report.parse_ab_csv((DATA / "ab-ok.csv").read_text())[50]
        self.assertEqual(m["p50_ms"], csv_p50)
        self.assertNotEqual(csv_p50, float(int(csv_p50)), "the CSV gives sub-millisecond resolution")

    def test_whole_millisecond_table_without_csv(self):
        m = report.parse_ab((DATA / "ab-ok.txt").read_text())
        self.assertEqual((m["p50_ms"], m["p99_ms"], m["max_ms"]), (1.0, 2.0, 3.0))

    def test_failures_count_non_2xx_but_not_length(self):
        m = report.parse_ab((DATA / "ab-failures.txt").read_text())
        self.assertEqual(m["failed_length_ignored"], 1010)
        self.assertEqual(m["non_2xx"], 396)
        self.assertEqual(m["failures"], 396)

    def test_aborted_ab_has_no_result(self):
        self.assertIsNone(report.parse_ab((DATA / "ab-aborted.txt").read_text()))


class ParseWrk(unittest.TestCase):
    def test_reads_the_lua_summary_line(self):
        m = report.parse_wrk((DATA / "wrk-ok.txt").read_text())
        self.assertEqual(m["complete"], 19870)
        self.assertAlmostEqual(m["rps"], 19870 / 1.079663, places=3)
        self.assertEqual(m["failures"], 0)
        self.assertEqual(m["p99_ms"], 168.596)

    def test_counts_socket_errors_and_non_2xx(self):
        m = report.parse_wrk((DATA / "wrk-failures.txt").read_text())
        self.assertEqual(m["failures"], 314 + 6045)

    def test_plain_wrk_output_without_the_script_has_no_result(self):
        self.assertIsNone(report.parse_wrk("Requests/sec:  18403.89\n"))


class Summary(unittest.TestCase):
    def test_ratio_to_anchor_is_the_median_of_same_round_ratios(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = ResultsDir(tmp)
            for rnd, dummy, kilim in ((1, 100.0, 50.0), (2, 200.0, 40.0), (3, 50.0, 45.0)):
                d.run(rnd, "dummy", dummy)
                d.run(rnd, "kilim", kilim)
            settings, runs, _ = d.load()
            row = next(r for r in report.summarize(settings, runs) if r["server"] == "kilim")
        # per round 0.5, 0.2, 0.9 -> 0.5; the ratio of the medians would be 45/100 = 0.45
        self.assertAlmostEqual(row["rps_vs_dummy"], 0.5)
        self.assertEqual(row["rps_median"], 45.0)
        self.assertIsNone(row["rps_vs_nginx"], "no nginx run: no ratio rather than a made-up one")

    def test_cpu_per_request_and_utilisation_from_ticks(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = ResultsDir(tmp)
            d.run(1, "kilim", 1000.0, complete=5000, ticks=100, wall=2.0, client_ms=1900)
            _, runs, _ = d.load()
        r = runs[0]
        self.assertAlmostEqual(r["server_cpu_us_per_request"], 200.0)  # 1 s of CPU / 5000 requests
        self.assertAlmostEqual(r["server_cpu_pct"], 50.0)  # 1 s of CPU in 2 s
        self.assertAlmostEqual(r["client_cpu_pct"], 95.0)
        self.assertTrue(r["client_saturated"])
        self.assertAlmostEqual(r["rss_peak_mb"], 100.0)

    def test_capped_step_is_labelled_with_what_ran(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = ResultsDir(tmp)
            d.run(1, "kilim", 1000.0, requested=20000, ran=19500, reason="open-files limit 20000")
            settings, runs, _ = d.load()
            row = report.summarize(settings, runs)[0]
            notes = report.notes(settings, runs)
        self.assertEqual(row["concurrency"], 19500)
        self.assertEqual(row["label"], "requested 20000, ran 19500: open-files limit 20000")
        self.assertIn("19500* is a capped step: requested 20000, ran 19500: open-files limit 20000.", notes)
        header, rows = report.table_rows(settings, [row])
        self.assertEqual(rows[0][1], "19500*", "the table shows what ran, never the requested 20000")

    def test_failed_client_run_is_left_out_and_reported(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = ResultsDir(tmp)
            d.run(1, "kilim", 1000.0)
            d.run(2, "kilim", 3000.0, rc=24)
            (d.dir / "raw/r2-kilim-c1000.txt").write_text((DATA / "ab-aborted.txt").read_text())
            (d.dir / "raw/r2-kilim-c1000.txt.err").write_text("socket: Too many open files (24)\n")
            settings, runs, _ = d.load()
            row = report.summarize(settings, runs)[0]
            (d.dir / "problems.tsv").write_text("3\tkilim\tkilim exited before it was ready (log: x)\n")
            settings, runs, _ = report.load(d.dir)
            notes = report.notes(settings, runs)
        self.assertIn("Round 3: kilim exited before it was ready (log: x)", notes)
        self.assertEqual((row["rounds"], row["rounds_ok"], row["rps_median"]), (2, 1, 1000.0))
        self.assertTrue(any("Too many open files" in n for n in notes))

    def test_report_writes_csv_and_json_without_charts(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = ResultsDir(tmp)
            d.run(1, "dummy", 100.0)
            d.run(1, "kilim", 50.0)
            d.load()
            self.assertEqual(report.main(["report", tmp, "--no-charts"]), 0)
            doc = json.loads((d.dir / "summary.json").read_text())
            summary_csv = (d.dir / "summary.csv").read_text()
        self.assertEqual([r["server"] for r in doc["summary"]], ["dummy", "kilim"])
        self.assertEqual(doc["after_sweep"][0]["cpu_pct_max"], 90)
        self.assertIn("kilim,1000,1000,,1,1,50.000,0,", summary_csv)


if __name__ == "__main__":
    unittest.main()
