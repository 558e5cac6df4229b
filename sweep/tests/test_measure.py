"""/proc readings, taken on processes this test starts."""

import os
import subprocess
import sys
import time

from kiln_sweep import measure


# Burns CPU time, not wall time: the measured figures must not depend on how busy the machine is.
BURN = "import time\nwhile time.process_time() < {}: pass\n"


def busy(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_cpu_ticks_count_this_process_and_a_gone_one_counts_zero():
    before = measure.cpu_ticks([os.getpid()])
    busy(0.3)
    assert measure.cpu_ticks([os.getpid()]) - before >= 0.1 * measure.CLK_TCK
    assert measure.cpu_ticks([2 ** 22 + 1]) == 0


def test_user_ticks_are_part_of_all_ticks():
    busy(0.3)  # a loop in user space
    user, system = measure.cpu_ticks_split([os.getpid()])
    assert user >= 0.1 * measure.CLK_TCK and system >= 0
    assert measure.cpu_ticks([os.getpid()]) >= user + system
    assert measure.cpu_ticks_split([2 ** 22 + 1]) == (0, 0)


def test_peak_resident_set_is_read_in_kb():
    hwm = measure.status_kb("VmHWM", [os.getpid()])
    assert hwm > 1024
    assert measure.status_kb("VmHWM", [os.getpid(), os.getpid()]) == 2 * hwm
    assert measure.status_kb("VmHWM", [2 ** 22 + 1]) == 0


def test_a_process_name_with_spaces_and_parentheses_does_not_shift_the_fields(tmp_path):
    odd = tmp_path / "a b) (c"
    odd.symlink_to(sys.executable)
    p = subprocess.Popen([str(odd), "-c", BURN.format(0.3) + "print(flush=True)\ntime.sleep(30)"],
                         stdout=subprocess.PIPE)
    try:
        p.stdout.readline()
        assert measure.alive(p.pid)
        assert measure.cpu_ticks([p.pid]) >= 0.2 * measure.CLK_TCK
    finally:
        p.kill()
        p.wait()
    assert not measure.alive(p.pid)


def test_children_are_found_by_their_parent():
    p = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30 & wait"])
    try:
        deadline = time.monotonic() + 10
        while len(measure.children(p.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(measure.children(p.pid)) == 2
    finally:
        for c in measure.children(p.pid):
            os.kill(c, 9)
        p.wait()


def test_a_waited_for_child_s_cpu_is_counted():
    before = sum(measure.children_cpu_ms())
    subprocess.run([sys.executable, "-c", BURN.format(0.3)], check=True)
    assert sum(measure.children_cpu_ms()) - before >= 290, "user + system ms of the child's 0.3 s of CPU"


def test_the_machine_is_described():
    m = measure.machine()
    assert m["kernel"].startswith("Linux") and m["memory"].endswith(" GiB") and "allowed" in m["cpus"]
