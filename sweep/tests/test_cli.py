"""./ab-sweep.sh's command line: --help, bad usage, the names it accepts, --plan-only under a real limit."""

import resource

import pytest

from conftest import ROOT, ab_sweep
from test_registry import conf_names


def test_help_documents_every_option_and_every_front_end():
    done = ab_sweep("--help")
    assert done.returncode == 0, done.stderr
    for opt in ("--path", "--quick", "--latency", "--client", "--concurrency", "--duration", "--rounds", "--heap",
                "--no-pin", "--no-anchors", "--no-build", "--port", "--out", "--plan-only", "--setup",
                "--no-install", "--report", "--vps", "--memory", "--no-jfr", "--perf", "--nmt", "--postgres"):
        assert opt in done.stdout, f"--help does not document {opt}"
    for name in conf_names() + ["dummy", "nginx", "netty", "vertx", "all"]:
        assert f" {name}" in done.stdout, f"--help does not name {name}"


@pytest.mark.parametrize("args, message", [
    (["--bogus"], "unknown option '--bogus'"),
    (["nosuchserver"], "unknown SERVER 'nosuchserver'"),
    (["kilim", "--client", "curl"], "--client must be ab or wrk, got 'curl'"),
    (["kilim", "--path", "hello"], "--path must start with /"),
    (["kilim", "--duration", "0"], "--duration must be 1..600 seconds"),
    (["kilim", "--rounds", "21"], "--rounds must be 1..20"),
    (["kilim", "--concurrency", "10,,20"], "--concurrency takes numbers separated by commas"),
    (["kilim", "--heap", "lots"], "--heap takes a JVM size"),
    (["kilim", "--port", "0"], "--port must be 1..65535"),
    (["kilim", "--out"], "--out needs a value"),
    ([], "name a SERVER (or all)"),
    (["kilim", "--vps", "--memory"], "--vps and --memory do not go together: choose one"),
    (["kilim", "--latency", "--vps"], "--latency and --vps do not go together"),
    (["kilim", "--memory", "--client", "wrk"], "--memory opens its own idle connections: --client does not apply"),
])
def test_bad_usage_exits_2_and_says_why(args, message):
    done = ab_sweep(*args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "./ab-sweep.sh --help" in done.stderr


@pytest.mark.parametrize("name", conf_names() + ["dummy", "nginx", "netty", "vertx", "all"])
def test_plan_only_accepts_every_front_end_of_frontends_conf(name):
    # shared/hooks/before-stop runs exactly this for every name in the Makefile's SERVERS.
    done = ab_sweep("--plan-only", name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("Servers:     dummy nginx netty")
    if name not in ("dummy", "nginx", "netty", "all"):
        assert done.stdout.splitlines()[0].split()[1:] == ["dummy", "nginx", "netty", name]


def test_all_means_every_front_end_and_anchors_come_first_once():
    done = ab_sweep("--plan-only", "all", "kilim", "dummy")
    assert done.stdout.splitlines()[0].split()[1:] == ["dummy", "nginx", "netty"] + conf_names()
    done = ab_sweep("--plan-only", "--no-anchors", "kilim")
    assert done.stdout.splitlines()[0] == "Servers:     kilim"


def test_plan_shows_the_java_chosen_for_each_jdk_range():
    done = ab_sweep("--plan-only", "all")
    java_lines = [line for line in done.stdout.splitlines() if line.startswith("Java:")]
    assert java_lines and all("(Java " in line for line in java_lines)
    assert any("comsat" in line for line in java_lines)


def test_plan_only_caps_under_a_real_lower_limit():
    # A real limit, lowered for the child (soft and hard), not a fake one: the sweep must detect it.
    done = ab_sweep("kilim", "--plan-only",
                    preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (5000, 5000)))
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "c=requested 5000, ran 4500: open-files limit 5000" in out
    assert "c=1000" in out and "c=2000" in out
    assert "ulimit -n 102400" in out and "LimitNOFILE" in out and "limits.conf" in out
    assert "c=20000" not in out, "a capped step is labelled with the requested number"
    assert "skipping concurrency 10000: capped to 4500" in out


def test_plan_only_raises_the_soft_limit_to_the_hard_one():
    done = ab_sweep("kilim", "--plan-only", "--quick",
                    preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 5000)))
    assert "open-files limit: soft 1024 raised to the hard limit 5000" in done.stdout
    assert "Open files:  soft 5000, hard 5000 (started with soft 1024)" in done.stdout


def test_quick_and_latency_choose_their_steps():
    assert "c=10\n  c=100\n" in ab_sweep("kilim", "--plan-only", "--quick").stdout
    lat = ab_sweep("kilim", "--plan-only", "--latency").stdout
    assert "c=1\n  c=10\n  c=100\n  c=1000\n" in lat


def test_memory_plans_19500_connections_capped_by_the_open_files_limit():
    done = ab_sweep("kilim", "--memory", "--plan-only",
                    preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (5000, 5000)))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Connections:\n  c=requested 19500, ran 4500: open-files limit 5000\n" in done.stdout
    assert "--idle-timeout 600000" in done.stdout
    assert "Connections:\n  c=300\n  c=19500\n" in ab_sweep("kilim", "--memory", "--plan-only", "--concurrency",
                                                             "300,19500").stdout


def test_report_of_a_directory_without_records_fails_clearly(tmp_path):
    done = ab_sweep("--report", tmp_path, "--no-install")
    assert done.returncode == 1
    assert f"{tmp_path} holds no runs.jsonl" in done.stderr


def test_the_wrapper_runs_the_package_on_the_system_python_alone():
    # The sweep needs no third-party module: importing every module but the charts pulls in none.
    import subprocess
    import sys
    code = ("import sys; import kiln_sweep.cli, kiln_sweep.run, kiln_sweep.report; "
            "bad = [m for m in ('matplotlib', 'plotly', 'jinja2', 'numpy', 'pytest') if m in sys.modules]; "
            "sys.exit(bool(bad))")
    assert subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(ROOT / 'sweep')!r}); "
                           + code], check=False).returncode == 0


def test_a_front_end_without_a_fitting_jdk_is_named_in_the_plan_and_stops_a_real_run(monkeypatch, capsys):
    from kiln_sweep import SweepError, cli, run, servers
    real = servers.find_java

    def no_jdk_17(root, jdk_range):
        if jdk_range == "17":
            raise SweepError("find-java.sh: no JDK 17 in $JAVA or /usr/lib/jvm")
        return real(root, jdk_range)

    monkeypatch.setattr(servers, "find_java", no_jdk_17)
    monkeypatch.chdir(ROOT)
    assert run.main(cli.parse(["--plan-only", "comsat", "kilim"])) == 0
    out = capsys.readouterr().out
    assert "Missing:     JDK 17 (for comsat): find-java.sh: no JDK 17" in out
    assert "for dummy, netty, kilim" in out
    with pytest.raises(SweepError, match="JDK 17 \\(for comsat\\)"):
        run.main(cli.parse(["comsat", "--quick"]))
