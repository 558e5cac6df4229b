"""/proc readings, taken on processes this test starts."""

import os
import subprocess
import sys
import time

from kiln_sweep import measure


def busy(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def test_cpu_ticks_count_this_process_and_a_gone_one_counts_zero():
    before = measure.cpu_ticks([os.getpid()])
    busy(0.3)
    assert measure.cpu_ticks([os.getpid()]) - before >= 0.1 * measure.CLK_TCK
    assert measure.cpu_ticks([2 ** 22 + 1]) == 0


def test_peak_resident_set_is_read_in_kb():
    hwm = measure.status_kb("VmHWM", [os.getpid()])
    assert hwm > 1024
    assert measure.status_kb("VmHWM", [os.getpid(), os.getpid()]) == 2 * hwm
    assert measure.status_kb("VmHWM", [2 ** 22 + 1]) == 0


def test_a_process_name_with_spaces_and_parentheses_does_not_shift_the_fields(tmp_path):
    odd = tmp_path / "a b) (c"
    odd.symlink_to(sys.executable)
    p = subprocess.Popen([str(odd), "-c", "import time\nend = time.time() + 0.5\nwhile time.time() < end: pass\n"
                          "time.sleep(5)"])
    try:
        time.sleep(1)
        assert measure.alive(p.pid)
        assert measure.cpu_ticks([p.pid]) >= 0.2 * measure.CLK_TCK
    finally:
        p.kill()
        p.wait()
    assert not measure.alive(p.pid)


def test_children_are_found_by_their_parent():
    p = subprocess.Popen(["sh", "-c", "sleep 5 & sleep 5 & wait"])
    try:
        time.sleep(0.5)
        assert len(measure.children(p.pid)) == 2
    finally:
        for c in measure.children(p.pid):
            os.kill(c, 9)
        p.wait()


def test_a_waited_for_child_s_cpu_is_counted():
    user0, _ = measure.children_cpu_ms()
    subprocess.run([sys.executable, "-c", "import time\nend = time.time() + 0.3\nwhile time.time() < end: pass"],
                   check=True)
    user1, _ = measure.children_cpu_ms()
    assert user1 - user0 >= 200


def test_the_machine_is_described():
    m = measure.machine()
    assert m["kernel"].startswith("Linux") and m["memory"].endswith(" GiB") and "allowed" in m["cpus"]
