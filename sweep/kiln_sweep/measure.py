"""Readings from /proc (proc(5)): CPU ticks and memory of the server's processes, liveness, children,
and this machine's description for the report."""

import os
import platform
import resource
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid):
    """/proc/PID/stat from field 3 (state) on, or None when the process is gone. The command name
    (field 2) may hold spaces and parentheses: split after its last ')'."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2:].split()


def alive(pid):
    """True while `pid` exists and is not a zombie."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def cpu_ticks(pids):
    """Sum of utime + stime (clock ticks, CLK_TCK per second) over the processes, all threads included
    (fields 14 and 15 of /proc/PID/stat). A process that is gone counts 0."""
    return sum(cpu_ticks_split(pids))


def cpu_ticks_split(pids):
    """(utime, stime): cpu_ticks' two parts, user space and kernel, from one read of each process's stat."""
    user = system = 0
    for pid in pids:
        fields = _stat_fields(pid)
        if fields:
            user += int(fields[11])
            system += int(fields[12])
    return user, system


def status_kb(field, pids):
    """Sum of a /proc/PID/status field in kB over the processes, e.g. VmHWM (peak resident set)."""
    total = 0
    for pid in pids:
        try:
            lines = Path(f"/proc/{pid}/status").read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            key, _, value = line.partition(":")
            if key == field:
                total += int(value.split()[0])
                break
    return total


def children(pid):
    """The processes whose parent is `pid` (nginx's worker under its master)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            fields = _stat_fields(d.name)
            if fields and fields[1] == str(pid):
                out.append(int(d.name))
    return sorted(out)


def children_cpu_ms():
    """(user, system) CPU ms of every child process this one has waited for so far: the difference
    around one client run is that client's CPU."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return round(r.ru_utime * 1000), round(r.ru_stime * 1000)


def _proc_value(path, key):
    for line in Path(path).read_text().splitlines():
        k, _, v = line.partition(":")
        if k.strip() == key:
            return v.strip()
    return ""


def machine():
    """Kernel, CPU model, CPUs and memory, as the report's settings show them."""
    allowed = _proc_value("/proc/self/status", "Cpus_allowed_list")
    mem_kb = int(_proc_value("/proc/meminfo", "MemTotal").split()[0])
    return {
        "kernel": f"{platform.system()} {platform.release()}",
        "cpu_model": _proc_value("/proc/cpuinfo", "model name"),
        "cpus": f"{len(os.sched_getaffinity(0))} ({allowed} allowed)",
        "memory": f"{mem_kb / 1048576:.1f} GiB",
    }
