"""ab and wrk: their command lines and their real outputs (sweep/testdata/)."""

import pytest

from conftest import DATA
from kiln_sweep import clients


def test_ab_reads_rate_count_and_percentiles_to_the_microsecond():
    m = clients.parse_output(DATA / "ab-ok.txt", "ab")
    assert m.complete == 5000
    assert m.rps == pytest.approx(27302.26)
    assert m.failures == 0
    assert m.mean_ms == pytest.approx(0.733)
    csv_p50 = clients.parse_ab_csv((DATA / "ab-ok.csv").read_text())[50]
    assert m.p50_ms == csv_p50
    assert csv_p50 != float(int(csv_p50)), "the CSV gives sub-millisecond resolution"


def test_ab_whole_millisecond_table_without_csv():
    m = clients.parse_ab((DATA / "ab-ok.txt").read_text())
    assert (m.p50_ms, m.p99_ms, m.max_ms) == (1.0, 2.0, 3.0)


def test_ab_failures_count_non_2xx_but_not_length():
    m = clients.parse_ab((DATA / "ab-failures.txt").read_text())
    assert m.failed_length_ignored == 1010
    assert m.non_2xx == 396
    assert m.failures == 396


def test_aborted_ab_has_no_result():
    assert clients.parse_ab((DATA / "ab-aborted.txt").read_text()) is None
    assert clients.parse_output(DATA / "no-such-file.txt", "ab") is None


def test_wrk_reads_the_lua_summary_line():
    m = clients.parse_output(DATA / "wrk-ok.txt", "wrk")
    assert m.complete == 19870
    assert m.rps == pytest.approx(19870 / 1.079663, abs=1e-3)
    assert m.failures == 0
    assert m.p99_ms == 168.596


def test_wrk_counts_socket_errors_and_non_2xx():
    assert clients.parse_wrk((DATA / "wrk-failures.txt").read_text()).failures == 314 + 6045


def test_plain_wrk_output_without_the_script_has_no_result():
    assert clients.parse_wrk("Requests/sec:  18403.89\n") is None


def test_ab_command_keeps_alive_counts_receive_errors_and_ignores_length():
    cmd = clients.command("ab", 100, 2500, 30, "http://127.0.0.1:1/hello", "out.csv")
    assert cmd == ["ab", "-q", "-k", "-r", "-l", "-s", "30", "-t", "30", "-n", "2500", "-c", "100", "-e", "out.csv",
                   "http://127.0.0.1:1/hello"]
    assert cmd.index("-t") < cmd.index("-n"), "ab's -t resets -n: -n must come after it"


def test_wrk_command_runs_the_report_script():
    cmd = clients.command("wrk", 100, 2500, 30, "http://127.0.0.1:1/hello", wrk_threads=2)
    assert cmd[:7] == ["wrk", "-t", "2", "-c", "100", "-d", "30s"]
    assert str(clients.WRK_SCRIPT) in cmd and clients.WRK_SCRIPT.is_file()
