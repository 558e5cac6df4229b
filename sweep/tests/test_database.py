"""./ab-sweep.sh --postgres: its setups, its table of medians, and the options it refuses. (The run itself needs
PostgreSQL, nginx and the jars: docs/benchmarks/ holds one, with its command.)"""

import pytest

from conftest import ab_sweep
from kiln_sweep import database, registry


def row(rnd, setup, path, rps, server_us, postgres_us, failures=0):
    return database.Row(rnd, setup, path, 256, int(rps * 10), rps, failures, server_us, postgres_us, "raw/x.txt")


def test_every_front_end_named_gets_lmdb_postgresql_and_two_behind_nginx_then_the_anchor():
    kilim = registry.Server("kilim", "jar", "http-kilim", "http-kilim/target/kiln-kilim.jar", "17+")
    names = [s.name for s in database.setups([kilim])]
    assert names == ["kilim lmdb", "kilim postgresql", "2 x kilim + nginx, postgresql", "vertx postgresql"]
    two = database.setups([kilim])[2]
    assert two.copies == 2 and two.postgres
    assert not database.setups([kilim])[0].postgres


def test_the_table_holds_the_median_of_the_rounds_per_setup_and_path():
    rows = [row(1, "kilim postgresql", "/db", 1000, 100, 50), row(2, "kilim postgresql", "/db", 3000, 300, 70),
            row(3, "kilim postgresql", "/db", 2000, 200, 60, failures=2),
            row(1, "vertx postgresql", "/db", 900, 150, 80)]
    table = database.markdown(rows, 256)
    assert "c=256; medians over 3 rounds" in table
    assert "| kilim postgresql | /db | 2,000 | 200 | 60 | 260 | 2 |" in table
    assert "| vertx postgresql | /db | 900 | 150 | 80 | 230 | 0 |" in table
    assert table.index("kilim postgresql") < table.index("vertx postgresql"), "setups in the order they were measured"


@pytest.mark.parametrize("args, message", [
    (["--postgres", "--memory"], "--memory and --postgres do not go together"),
    (["--postgres", "--subscribers", "10"], "--subscribers and --postgres do not go together"),
    (["--postgres", "dummy"], "--postgres measures kiln front ends (frontends.conf), not 'dummy'"),
    (["--postgres", "--concurrency", "10,20", "kilim"], "--postgres loads at one concurrency"),
])
def test_bad_usage_exits_2_and_says_why(args, message):
    done = ab_sweep(*args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr, done.stderr
