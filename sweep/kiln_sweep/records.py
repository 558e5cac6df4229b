"""What a sweep writes while it runs, as typed records: settings.json once, then one JSON line per
record in runs.jsonl (timed runs), after.jsonl (after-sweep windows) and problems.jsonl. Lines are
appended as they are measured, so a sweep that stops early still leaves what it measured. Beside
them, commands.log holds every command line the sweep ran."""

import json
import shlex
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

SETTINGS = "settings.json"
RUNS = "runs.jsonl"
AFTER = "after.jsonl"
PROBLEMS = "problems.jsonl"
MEMORY = "memory.jsonl"
FANOUT = "fanout.jsonl"
COMMANDS = "commands.log"


@dataclass
class Settings:
    """How the sweep ran and on what: the report's header and settings table."""
    date: str
    mode: str                      # "sweep", "latency" or "memory"
    quick: bool
    servers: List[str]             # in the order of the first round
    anchors: bool
    path: str
    client: str                    # "ab" or "wrk"
    rounds: int
    duration_s: int
    steps_requested: List[int]
    heap: str
    pinning: str
    nofile_soft_start: str         # open-files limits: a number or "unlimited"
    nofile_soft: str
    nofile_hard: str
    clk_tck: int
    idle_threshold_pct: int
    after_window_s: int
    requests_per_connection_min: int
    wrk_threads: Optional[int] = None
    plan_notes: List[str] = field(default_factory=list)
    nofile_advice: str = ""        # how to raise the limit, when it capped a step
    kernel: str = ""
    cpu_model: str = ""
    cpus: str = ""
    memory: str = ""
    java: str = ""
    nginx: str = ""
    client_version: str = ""
    commit: str = ""
    vps: str = ""                  # --vps: the cgroup's limits, e.g. "CPU 1 (cpuset), 1 GiB memory (cgroup v1)"
    pinned_threshold_ms: Optional[int] = None   # JFR jdk.VirtualThreadPinned threshold; None: not recorded
    memory_extra: str = ""         # --memory: what was changed for it (e.g. the front ends' idle timeout)
    jars: str = ""                 # each front end's jar and when it was built (a rebuild mid-sweep shows)
    fanout_rate: Optional[int] = None           # --subscribers: commits per second in the publish phase
    fanout_processes: Optional[int] = None      # --subscribers: client processes the subscribers are spread over
    fanout_client: str = ""        # --subscribers: which client ("java": sweep/FanoutClient.java; "python")
    perf: str = ""                 # --perf: what perf recorded (the events counted, the sampling rate)
    nmt: str = ""                  # --nmt: the JVM flag


@dataclass
class TimedRun:
    """One timed client run against one server at one step, as measured around it. The client's own
    figures (req/s, failures, latency) are in its raw output, `raw`, relative to the results dir."""
    round: int
    server: str
    step: int                      # 1-based position in the plan
    requested: int
    concurrency: int               # what ran (capped when cap_reason is set)
    cap_reason: str
    raw: str
    warmup_raw: str
    client_rc: int
    requests_limit: int
    time_limit_s: int
    wall_s: float
    server_cpu_ticks: int          # utime + stime of the server's processes during the run
    client_user_ms: int
    client_sys_ms: int
    rss_hwm_kb: int                # peak resident set (VmHWM) when the run ended; 0 if the server was gone
    rss_kb: int
    idle_wait_s: float             # waited for the server to go idle before the run
    idle_reached: bool
    server_alive: bool
    # --vps: the memory cgroup over the step (warm-up and timed run): peak bytes, how often the limit was
    # hit, OOM kills in the group during the step (None: the kernel does not count them), and the group.
    cgroup_peak_bytes: Optional[int] = None
    cgroup_failcnt: Optional[int] = None
    cgroup_oom_kills: Optional[int] = None
    cgroup: str = ""
    # JDK 21+ front ends: JFR jdk.VirtualThreadPinned events new during the step (warm-up and timed run;
    # None: not recorded), the longest (ms), the most frequent places [[count, reason, frames], ...],
    # the dump they came from and why it could not be read ("" when it could).
    pinned_events: Optional[int] = None
    pinned_max_ms: Optional[float] = None
    pinned_top: List[list] = field(default_factory=list)
    pinned_jfr: str = ""
    pinned_error: str = ""
    # --perf: perf stat's system call counts during the timed run by name ("total": all of them; None: not
    # counted), per completed request, the flat CPU profile's largest rows [[percent, dso, symbol], ...]
    # (raw/<run>-perf-top.txt has 15) and what could not be recorded ("" when all was).
    syscall_counts: Dict[str, Optional[int]] = field(default_factory=dict)
    syscalls_per_request: Optional[float] = None
    syscalls_per_request_by_name: Dict[str, float] = field(default_factory=dict)
    perf_top: List[list] = field(default_factory=list)
    perf_top_raw: str = ""
    perf_error: str = ""
    # --nmt (JVMs): Native Memory Tracking's summary after the timed run: totals and committed KB per
    # category; its jcmd output, and why it could not be read.
    nmt_reserved_kb: Optional[int] = None
    nmt_committed_kb: Optional[int] = None
    nmt_committed_kb_by_category: Dict[str, int] = field(default_factory=dict)
    nmt_raw: str = ""
    nmt_error: str = ""


@dataclass
class MemoryRun:
    """--memory: one server holding `connections` idle keep-alive connections (each after one
    completed request), against its own baseline just before they opened. Histograms (JVMs only) are
    raw jcmd GC.class_histogram outputs relative to the results dir; "" for nginx."""
    round: int
    server: str
    requested: int
    connections: int               # attempted (capped when cap_reason is set)
    cap_reason: str
    opened: int                    # completed their request and went idle
    established: int               # the server's established sockets on its port (ss) when measured
    still_open: int                # of `opened`, not closed by the server when the measurement ended
    open_s: float                  # time to open them all
    errors: str                    # the client's failures, counted by kind ("" when none)
    rss_before_kb: int             # VmRSS of the server's processes
    rss_after_kb: int
    histogram_before: str = ""
    histogram_after: str = ""
    error: str = ""                # why this server has no figures ("" when it has them)


@dataclass
class FanoutRun:
    """--subscribers: one fresh server holding `subscribers` server-sent-event streams, idle and then
    while `rate` commits a second are published for `duration_s` s (kiln_sweep.fanout). Counts of events
    are over all subscribers; CPU ticks are over publish and drain (wall_s)."""
    round: int
    server: str
    requested: int
    subscribers: int               # attempted (capped when cap_reason is set)
    cap_reason: str
    client_processes: int
    rate: int
    duration_s: int
    client: str = ""               # the subscriber processes' program: "java" (FanoutClient.java) or "python"
    held: int = 0                  # got 200 text/event-stream and the stream's first bytes
    connect_s: float = 0.0
    connect_errors: str = ""
    established: int = 0           # the server's established sockets on its port (ss) with all held
    heap_before_bytes: Optional[int] = None     # live heap (class histogram total); None: not a JVM
    heap_after_bytes: Optional[int] = None
    histogram_before: str = ""
    histogram_after: str = ""
    rss_before_kb: int = 0
    rss_after_kb: int = 0
    warmup_commits: int = 0        # commits before the measured phase, their events not counted
    warmup_last_id: int = 0        # the last warm-up event's id: counting starts after it
    sent: int = 0                  # /updates requests sent
    commits: int = 0               # of them answered 2xx
    publish_failures: str = ""
    publish_s: float = 0.0
    publish_late: int = 0          # requests sent over 100 ms after their time (every connection busy)
    publish_answer_ms_p50: Optional[float] = None   # the /updates requests' own response times
    publish_answer_ms_p99: Optional[float] = None
    publish_answer_ms_max: Optional[float] = None
    drain_s: float = 0.0
    wall_s: float = 0.0            # publish + drain
    expected: int = 0              # commits x held
    received: int = 0              # update events read by all subscribers
    chunks: int = 0
    bytes: int = 0
    latency_histogram: str = ""    # raw/...-latency.json: {bucket_us, hist {bucket: count}, max_us}
    p50_ms: Optional[float] = None
    p99_ms: Optional[float] = None
    max_ms: Optional[float] = None
    negative: int = 0              # receipt before committedAt (counted as 0)
    gaps: int = 0                  # ids missing inside streams
    subscribers_with_gaps: int = 0
    duplicates: int = 0
    missed_before_first: int = 0   # events before a subscriber's first one (others had them)
    missed_after_last: int = 0     # events after its last one when the clients stopped
    silent: int = 0                # held subscribers that received no event
    reloads: int = 0
    other_events: int = 0
    malformed: int = 0
    ended: int = 0                 # streams the server ended before the clients stopped
    end_errors: str = ""
    per_subscriber_min: Optional[int] = None
    per_subscriber_max: Optional[int] = None
    first_id: Optional[int] = None
    last_id: Optional[int] = None
    server_cpu_ticks: int = 0
    client_cpu_ticks: int = 0
    client_rss_kb: int = 0
    rss_hwm_kb: int = 0
    cgroup_peak_bytes: Optional[int] = None
    cgroup_oom_kills: Optional[int] = None
    server_alive: bool = True
    log_problem_lines: int = 0
    log_problems: List[str] = field(default_factory=list)
    client_errors: str = ""
    error: str = ""                # why this step has no (or partial) figures


@dataclass
class AfterWindow:
    """The server's CPU (% of one core) in each second after its last step."""
    round: int
    server: str
    window_s: int
    cpu_pct_per_second: List[int]


@dataclass
class Problem:
    """A server that could not be measured in a round, or died in it."""
    round: int
    server: str
    message: str


def append(directory, name, record):
    with open(Path(directory) / name, "a") as f:
        f.write(json.dumps(asdict(record)) + "\n")


def read(directory, name, cls):
    """The records of one .jsonl file (none when it does not exist); unknown keys are an error."""
    path = Path(directory) / name
    if not path.is_file():
        return []
    return [cls(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


def write_settings(directory, settings):
    (Path(directory) / SETTINGS).write_text(json.dumps(asdict(settings), indent=2) + "\n")


def read_settings(directory):
    return Settings(**json.loads((Path(directory) / SETTINGS).read_text()))


def log_command(directory, cmd):
    """Appends a command line to commands.log, quoted as a shell would take it."""
    with open(Path(directory) / COMMANDS, "a") as f:
        f.write(shlex.join(cmd) + "\n")
