"""frontends.conf is the sweep's list of front ends: every line, its jar, JDK range and arguments."""

import pytest

from conftest import ROOT
from kiln_sweep import SweepError, registry


def conf_names():
    return [line.split()[0] for line in (ROOT / "frontends.conf").read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def test_every_line_of_frontends_conf_is_a_front_end_in_file_order():
    assert [s.name for s in registry.read_frontends(ROOT / "frontends.conf")] == conf_names()
    known = registry.known(ROOT)
    assert list(known) == conf_names() + ["dummy", "nginx", "netty", "vertx"]


def test_columns_give_the_jar_the_jdk_range_and_the_arguments():
    known = registry.known(ROOT)
    assert known["jetty-blocking"].jar == "http-jetty-async/target/kiln-jetty.jar"
    assert known["jetty-blocking"].args == ("--mode", "blocking")
    assert known["kilim"].args == ()
    assert known["comsat"].jdk == "17"
    assert known["kilim"].jdk == "17+"
    assert known["nginx"].runs_on_java is False and known["dummy"].runs_on_java is True
    assert known["netty"].jar == "bench-netty/target/netty-anchor.jar" and known["netty"].runs_on_java is True


def test_a_short_line_is_an_error_naming_it(tmp_path):
    conf = tmp_path / "frontends.conf"
    conf.write_text("# comment\n\nkilim http-kilim kiln-kilim.jar 17+\n")
    with pytest.raises(SweepError, match=r"frontends.conf:3:"):
        registry.read_frontends(conf)


def test_a_jar_is_rebuilt_from_the_modules_and_build_plugins_it_depends_on():
    # every front end: the demo over the server, the HTTP layer and the database with the two engines
    # its jar carries, LMDB and PostgreSQL (db is not woven)
    layers = {"demo", "server", "http", "db", "db-lmdb", "db-postgresql"}
    # http-kilim is woven by the kilim-weaver plugin, itself built with asm-api-level, which also
    # repairs the Quasar agent comsat runs on; loom needs neither
    assert set(registry.source_dirs(ROOT, "http-comsat")) == {"http-comsat", "quasar-agent", "asm-api-level"} | layers
    assert set(registry.source_dirs(ROOT, "http-kilim")) == {"http-kilim", "kilim-weaver", "asm-api-level"} | layers
    assert set(registry.source_dirs(ROOT, "http-loom")) == {"http-loom"} | layers


def test_a_missing_jar_is_outdated(tmp_path):
    server = registry.Server("x", "jar", "http-kilim", "http-kilim/target/no-such.jar", "17+")
    assert registry.jar_outdated(ROOT, server)
