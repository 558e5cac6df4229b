"""The step plan with fake open-files limits: capping, labels, dropped steps, step sizing."""

from kiln_sweep import plan
from kiln_sweep.plan import Step


def test_cap_under_the_limit_leaves_room_for_the_process_own_descriptors():
    assert plan.cap(20000, 20000, "ab") == Step(20000, 19500, "open-files limit 20000")
    assert plan.cap(20000, 15000, "ab") == Step(15000, 15000, "")
    assert plan.cap(1024, 1000, "ab") == Step(1000, 524, "open-files limit 1024")


def test_a_vps_limit_runs_the_full_step():
    assert plan.cap(102400, 20000, "ab") == Step(20000, 20000, "")
    assert plan.cap(None, 20000, "ab") == Step(20000, 20000, ""), "unlimited"


def test_ab_has_its_own_maximum_and_wrk_none():
    assert plan.cap(102400, 25000, "ab") == Step(25000, 20000, "ab's maximum concurrency 20000")
    assert plan.cap(102400, 25000, "wrk") == Step(25000, 25000, "")


def test_a_limit_below_the_spare_leaves_no_room():
    assert plan.cap(400, 10, "ab") == Step(10, 0, "open-files limit 400")


def test_labels_name_what_ran_never_only_what_was_requested():
    assert Step(20000, 19500, "open-files limit 20000").label == "requested 20000, ran 19500: open-files limit 20000"
    assert Step(1000, 1000).label == "1000"
    assert plan.step_label(1000, 1000, "") == "1000"


def test_steps_capped_to_the_same_concurrency_run_once_and_the_rest_are_reported():
    steps, notes = plan.plan(5000, "ab", [1000, 2000, 5000, 10000, 15000, 20000])
    assert steps == [Step(1000, 1000), Step(2000, 2000), Step(5000, 4500, "open-files limit 5000")]
    assert notes[0].startswith("skipping concurrency 10000: capped to 4500")
    assert any(n.startswith("skipping concurrency 20000") for n in notes)
    assert len(notes) == 3


def test_a_step_with_no_room_is_reported_not_run():
    steps, notes = plan.plan(400, "ab", [10])
    assert steps == [] and notes == ["skipping concurrency 10: the open-files limit 400 leaves no descriptors "
                                     "for connections"]


def test_timed_step_serves_25_requests_per_connection_or_the_warmup_rate_for_its_duration():
    assert plan.timed_load(19500, 10000, 10) == (487500, 30), "slow server, many connections"
    assert plan.timed_load(1000, 40000.5, 10) == (400000, 30), "fast server"
    assert plan.timed_load(100, None, 10) == (2500, 30), "warm-up gave no rate"


def test_warmup_count_exceeds_what_ab_sends_in_its_time():
    assert plan.warmup_requests(10, 1) == 150000
    assert plan.warmup_requests(19500, 10) == 1500000
    assert plan.warmup_requests(100000, 10) == 2500000


def test_wrk_duration_is_bounded_by_one_and_three_durations():
    assert plan.wrk_duration(487500, 10000, 10) == 30
    assert plan.wrk_duration(1000, 40000, 10) == 10
    assert plan.wrk_duration(250000, 10000, 10) == 25
    assert plan.wrk_duration(100, None, 10) == 30, "no rate: the longest"


def test_server_ports_avoid_the_ephemeral_range():
    assert plan.port_candidates(32768, 60999) == (10000, 32767)
    assert plan.port_candidates(1024, 60999) == (61000, 65535)
    assert plan.port_candidates(1024, 65535) == (1024, 65535)
