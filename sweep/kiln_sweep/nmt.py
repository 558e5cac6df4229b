"""--nmt: a JVM's native memory by category (Java Heap, Class, Thread, Code, GC, Internal, ...), as its
Native Memory Tracking counts it. The Java servers start with -XX:NativeMemoryTracking=summary (a few
per cent of CPU and a header per malloc); after each timed step `jcmd PID VM.native_memory summary`
prints, in JDK 17 to 25:

    Total: reserved=1580963KB, committed=180339KB
    -                 Java Heap (reserved=262144KB, committed=262144KB)
                                (mmap: reserved=262144KB, committed=262144KB)

Committed is what the JVM asked the kernel for and may touch; RSS counts what it has touched."""

import re
import subprocess
from pathlib import Path

from kiln_sweep import pinning

JVM_FLAG = "-XX:NativeMemoryTracking=summary"

_SCALE = {"B": 1 / 1024, "KB": 1, "MB": 1024, "GB": 1024 * 1024}
_SIZE = r"([0-9]+)(B|KB|MB|GB)"
_TOTAL = re.compile(rf"^Total: reserved={_SIZE}, committed={_SIZE}")
_CATEGORY = re.compile(rf"^-\s+(.+?)\s+\(reserved={_SIZE}, committed={_SIZE}\)")


def _kb(number, unit):
    return round(int(number) * _SCALE[unit])


def parse(text):
    """{reserved_kb, committed_kb, categories: {name: committed KB}} of a VM.native_memory summary;
    None when it holds no Total line (NMT off, or not a summary)."""
    total, categories = None, {}
    for line in text.splitlines():
        m = _TOTAL.match(line.strip())
        if m:
            total = _kb(m.group(1), m.group(2)), _kb(m.group(3), m.group(4))
            continue
        m = _CATEGORY.match(line.strip())
        if m:
            categories[m.group(1)] = _kb(m.group(4), m.group(5))
    if total is None:
        return None
    return {"reserved_kb": total[0], "committed_kb": total[1], "categories": categories}


def read(java_path, pid, out_file, timeout=60):
    """(parsed summary or None, error text or ""): jcmd of the server's JDK, its output saved to out_file."""
    jcmd = pinning.tool(java_path, "jcmd")
    if not jcmd:
        return None, f"no jcmd beside {java_path}"
    try:
        out = subprocess.run([jcmd, str(pid), "VM.native_memory", "summary"], capture_output=True, text=True,
                             timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return None, f"jcmd VM.native_memory did not end within {timeout} s"
    Path(out_file).write_text(out.stdout + out.stderr)
    summary = parse(out.stdout)
    if out.returncode != 0 or summary is None:
        lines = (out.stdout + out.stderr).strip().splitlines()
        return None, f"jcmd VM.native_memory: {lines[-1] if lines else f'exit status {out.returncode}'}"
    return summary, ""


def text(committed_kb):
    """The progress line's part: "  NMT committed 180 MB"."""
    return f"  NMT committed {committed_kb / 1024:.0f} MB" if committed_kb is not None else ""
