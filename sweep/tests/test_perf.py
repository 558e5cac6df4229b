"""--perf and --nmt: the parsers of perf stat -x, perf report --stdio and jcmd VM.native_memory summary on
their real output, the per-request division, the command line's checks, the exit status 2 where perf
cannot run, and the report's columns."""

import pytest

from conftest import ab_sweep
from kiln_sweep import cli, nmt, perf, records, report
from test_report import ResultsDir

# perf 6.1, `perf stat -x, -o FILE -e ... -p PID` ended by SIGINT (the FILE).
STAT = """\
# started on Wed Nov 25 08:55:31 2026

290940,,raw_syscalls:sys_enter,1873641822,100.00,,
126210,,syscalls:sys_enter_read,1873649307,100.00,,
126184,,syscalls:sys_enter_write,1873655062,100.00,,
<not counted>,,syscalls:sys_enter_writev,0,100.00,,
37464,,syscalls:sys_enter_epoll_wait,1873663283,100.00,,
<not supported>,,syscalls:sys_enter_sendto,0,100.00,,
"""

# perf 6.1, `perf report --stdio --sort dso,sym --percent-limit 1` of a JVM with its perf map.
REPORT = """\
# To display the perf.data header info, please use --header/--header-only options.
#
#
# Total Lost Samples: 0
#
# Samples: 758  of event 'cpu-clock:ppp'
# Event count (approx.): 1519038000
#
# Overhead  Shared Object      Symbol
# ........  .................  .....................................................................
#
     4.86%  [kernel.kallsyms]  [k] _raw_spin_unlock_irqrestore
     1.84%  [JIT] tid 8564     [.] void DummyServer.read(java.nio.channels.SelectionKey)
    12.02%  libjvm.so          [.] SpinPause
     1.31%  libc.so.6          [.] __GI___libc_write
     1.05%  [unknown]          [.] 0x00007f27a0ec7180


#
# (Tip: For a higher level overview, try: perf report --sort comm,dso)
#
"""

# JDK 17, jcmd PID VM.native_memory summary (shortened).
NMT = """\
8564:

Native Memory Tracking:

(Omitting categories weighting less than 1KB)

Total: reserved=1580963KB, committed=180339KB
       malloc: 12734KB #62071
       mmap:   reserved=7832392KB, committed=474864KB

-                 Java Heap (reserved=262144KB, committed=262144KB)
                            (mmap: reserved=262144KB, committed=262144KB)

-                     Class (reserved=1049397KB, committed=6197KB)
                            (classes #8024)
                            (malloc=212KB #4044) (at peak)

-                    Thread (reserved=19506KB, committed=890KB)
                            (thread #19)

-    Native Memory Tracking (reserved=200KB, committed=200KB)
"""


# ---------------------------------------------------------------------------------------------
# Parsers
# ---------------------------------------------------------------------------------------------
def test_perf_stat_counts_and_not_counted_events():
    counts = perf.parse_stat(STAT)
    assert counts == {"raw_syscalls:sys_enter": 290940, "syscalls:sys_enter_read": 126210,
                      "syscalls:sys_enter_write": 126184, "syscalls:sys_enter_writev": None,
                      "syscalls:sys_enter_epoll_wait": 37464, "syscalls:sys_enter_sendto": None}
    assert perf.parse_stat("") == {}


def test_syscalls_per_request_divide_by_completed_requests():
    total, by_name = perf.per_request(perf.parse_stat(STAT), 126184)
    assert total == pytest.approx(2.3057, abs=1e-4)
    assert by_name["write"] == 1.0 and by_name["read"] == pytest.approx(1.0002, abs=1e-4)
    assert by_name["writev"] == 0, "an event that never fired counts 0 calls"
    assert "total" not in by_name
    assert perf.per_request(perf.parse_stat(STAT), 0) == (None, {})
    assert perf.per_request({"syscalls:sys_enter_read": 5}, 10) == (None, {}), "no total: nothing per request"
    assert [perf.syscall_name(e) for e in ("raw_syscalls:sys_enter", "syscalls:sys_enter_epoll_wait")] == \
        ["total", "epoll_wait"]


def test_perf_report_rows_keep_symbols_with_spaces_and_sort_largest_first():
    rows = perf.parse_report(REPORT)
    assert rows[0] == (12.02, "libjvm.so", "SpinPause")
    assert (1.84, "[JIT] tid 8564", "void DummyServer.read(java.nio.channels.SelectionKey)") in rows
    assert (1.05, "[unknown]", "0x00007f27a0ec7180") in rows
    assert len(rows) == 5
    assert len(perf.parse_report(REPORT, top=2)) == 2
    assert perf.parse_report("# only comments\n#\n") == []
    text = perf.top_text(rows[:2])
    assert text.splitlines() == [" 12.02%  libjvm.so          SpinPause",
                                 "  4.86%  [kernel.kallsyms]  _raw_spin_unlock_irqrestore"]


def test_nmt_summary_totals_and_committed_per_category():
    summary = nmt.parse(NMT)
    assert summary["reserved_kb"] == 1580963 and summary["committed_kb"] == 180339
    assert summary["categories"] == {"Java Heap": 262144, "Class": 6197, "Thread": 890,
                                     "Native Memory Tracking": 200}
    assert nmt.parse("8564:\nNative memory tracking is not enabled\n") is None
    assert nmt.parse("Total: reserved=2GB, committed=512MB\n")["committed_kb"] == 512 * 1024
    assert nmt.text(180339) == "  NMT committed 176 MB" and nmt.text(None) == ""
    assert perf.text(2.3057) == "  syscalls/req 2.31" and perf.text(None) == ""


# ---------------------------------------------------------------------------------------------
# The command line and the preflight
# ---------------------------------------------------------------------------------------------
def test_help_documents_perf_and_nmt():
    done = ab_sweep("--help")
    assert "--perf" in done.stdout and "--nmt" in done.stdout
    assert "compare servers only within one --perf sweep" in " ".join(done.stdout.split())


@pytest.mark.parametrize("args, message", [
    (["kilim", "--perf", "--memory"], "--perf measures the timed load runs: it does not go with --memory"),
    (["kilim", "--nmt", "--subscribers", "10"], "--nmt measures the timed load runs: it does not go with --subscribers"),
])
def test_perf_and_nmt_go_with_the_load_only(args, message):
    done = ab_sweep(*args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr


def test_perf_and_nmt_are_accepted_with_the_sweep_vps_and_latency():
    for extra in ([], ["--vps"], ["--latency"]):
        opts = cli.parse(["dummy", "--perf", "--nmt", *extra])
        assert opts.perf and opts.nmt


def test_missing_perf_stops_the_sweep_with_exit_status_2(monkeypatch, capsys):
    monkeypatch.setattr(perf.shutil, "which", lambda name: None)
    assert perf.check() == "--perf needs perf: apt-get install -y linux-perf"
    assert cli.main(["dummy", "--perf", "--plan-only"]) == 2
    assert "ab-sweep: --perf needs perf: apt-get install -y linux-perf" in capsys.readouterr().err


def test_perf_that_may_not_count_stops_the_sweep_with_exit_status_2(monkeypatch, capsys):
    class Done:
        returncode, stdout = 255, ""
        stderr = "Error:\nNo permission to enable raw_syscalls:sys_enter event.\n"

    monkeypatch.setattr(perf.shutil, "which", lambda name: "/usr/bin/perf")
    monkeypatch.setattr(perf.subprocess, "run", lambda *a, **k: Done())
    assert cli.main(["dummy", "--perf", "--plan-only"]) == 2
    err = capsys.readouterr().err
    assert "`perf stat -e raw_syscalls:sys_enter -- true` failed: Error: No permission" in err
    assert "perf_event_paranoid" in err


def test_nmt_flag_goes_to_java_servers_only(monkeypatch):
    from kiln_sweep import preflight, registry
    monkeypatch.setattr(preflight.Plan, "__init__", lambda self, opts: None)
    p = preflight.Plan(None)
    p.opts = cli.parse(["dummy", "--nmt"])
    assert p.jvm_extra(registry.Server("dummy", "dummy", "", "", "17")) == [nmt.JVM_FLAG]
    assert p.jvm_extra(registry.Server("nginx", "nginx", "", "", "")) == []
    p.opts = cli.parse(["dummy"])
    assert p.jvm_extra(registry.Server("dummy", "dummy", "", "", "17")) == []


# ---------------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------------
def test_report_adds_syscalls_and_nmt_columns_when_measured(tmp_path):
    d = ResultsDir(tmp_path)
    s = records.read_settings(tmp_path)
    s.perf, s.nmt = "perf stat and perf record", nmt.JVM_FLAG
    records.write_settings(tmp_path, s)
    d.run(1, "kilim", 1000.0, complete=10000)
    run = records.read(tmp_path, records.RUNS, records.TimedRun)[0]
    run.syscalls_per_request, run.nmt_committed_kb = 2.5, 300 * 1024
    run.perf_top = [[12.0, "libjvm.so", "SpinPause"]]
    (tmp_path / records.RUNS).write_text("")
    records.append(tmp_path, records.RUNS, run)
    settings, runs, _, _ = report.load(tmp_path)
    summary = report.summarize(settings, runs)
    assert summary[0]["syscalls_per_req_median"] == 2.5 and summary[0]["nmt_committed_mb_max"] == 300
    header, rows = report.table_rows(settings, summary)
    assert header[-2:] == ["syscalls/req", "JVM committed (NMT) MB"] and rows[0][-2:] == ["2.50", "300"]
    assert "syscalls_per_req_median" in report.summary_fields(settings)
    assert report.summarize_profiles(settings, runs)[0]["top"] == [[12.0, "libjvm.so", "SpinPause"]]
    assert report.main([str(tmp_path)]) == 0
    assert "syscalls_per_req" in (tmp_path / "runs.csv").read_text().splitlines()[0]


def test_report_without_perf_or_nmt_has_no_such_columns(tmp_path):
    d = ResultsDir(tmp_path)
    d.run(1, "kilim", 1000.0)
    settings, runs, _, _ = report.load(tmp_path)
    header, _ = report.table_rows(settings, report.summarize(settings, runs))
    assert "syscalls/req" not in header and "JVM committed (NMT) MB" not in header
