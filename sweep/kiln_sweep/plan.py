"""The step plan: which concurrencies can really run under the open-files limit, how each step is named
and how long it runs. No I/O; the tests call it with fake limits."""

from dataclasses import dataclass

# Descriptors a process needs beyond one per connection: a JVM holds its jars, LMDB's files, epoll and
# selector pipes (measured ~C+10..30), ab ~C+4. 500 leaves room for both with margin, so a limit of
# 20000 allows 19500 connections (19000 and 19990 were measured to work here, 20000 was not).
FD_SPARE = 500
# ApacheBench refuses -c above this (MAX_CONCURRENCY in ab.c).
AB_MAX_CONCURRENCY = 20000
# A timed step serves at least this many requests per connection, so that connection setup does not
# dominate at high concurrency (FACTS.md: N >= 20-30 x C).
REQUESTS_PER_CONNECTION = 25

SWEEP_STEPS = (1000, 2000, 5000, 10000, 15000, 20000)
QUICK_STEPS = (10, 100)
LATENCY_STEPS = (1, 10, 100, 1000)
QUICK_LATENCY_STEPS = (1, 10)
MEMORY_STEPS = (19500,)
QUICK_MEMORY_STEPS = (200,)
# --subscribers (the fan-out benchmark): commits per second and seconds of the publish phase.
FANOUT_RATE = 10
# --fanout-client: the subscriber processes' program; the first is the default (kiln_sweep.fanout).
FANOUT_CLIENTS = ("java", "python")
FANOUT_DURATION_S = 30
# --memory: idle connections held without a request for the whole measurement; the front ends' default
# idle timeout (60 s) could close them before the second histogram, so it is raised to nginx's 300 s x 2.
MEMORY_IDLE_TIMEOUT_MS = 600000

NOFILE_ADVICE = """\
To run every step on a VPS, raise the open-files limit before starting the sweep:
  - this shell:   ulimit -n 102400   (works up to the hard limit; as root it can raise that too)
  - every login:  add "* soft nofile 102400" and "* hard nofile 102400" to /etc/security/limits.conf
                  (or a file in /etc/security/limits.d/), then log in again
  - a systemd service or `systemd-run`: LimitNOFILE=102400
ApacheBench itself stops at 20000 connections; use --client wrk to go higher.
"""


def step_label(requested, ran, reason):
    """How a step is named everywhere: a capped step is never labelled with the requested number."""
    return f"requested {requested}, ran {ran}: {reason}" if reason else str(ran)


@dataclass(frozen=True)
class Step:
    """One planned step: the concurrency asked for, the one that runs, and why they differ ("" if not)."""
    requested: int
    concurrency: int
    cap_reason: str = ""

    @property
    def label(self):
        return step_label(self.requested, self.concurrency, self.cap_reason)


def cap(nofile, requested, client):
    """The Step a requested concurrency can really run as. `nofile` is the open-files limit the server
    and the client will each have (None: unlimited); `client` is "ab" or "wrk". Its concurrency is 0
    when the limit leaves no room at all."""
    ran, reason = requested, ""
    if client == "ab" and ran > AB_MAX_CONCURRENCY:
        ran, reason = AB_MAX_CONCURRENCY, f"ab's maximum concurrency {AB_MAX_CONCURRENCY}"
    if nofile is not None:
        room = max(0, nofile - FD_SPARE)
        if ran > room:
            ran, reason = room, f"open-files limit {nofile}"
    return Step(requested, ran, reason)


def plan(nofile, client, requested):
    """(steps to run, notes). A step whose capped concurrency is 0 or equal to an earlier step's is
    dropped (running it again would only repeat that step) and said in a note instead."""
    steps, notes, seen = [], [], set()
    for r in requested:
        s = cap(nofile, r, client)
        if s.concurrency == 0:
            notes.append(f"skipping concurrency {r}: the {s.cap_reason} leaves no descriptors for connections")
        elif s.concurrency in seen:
            notes.append(f"skipping concurrency {r}: capped to {s.concurrency} ({s.cap_reason}), "
                         "which an earlier step already runs")
        else:
            seen.add(s.concurrency)
            steps.append(s)
    return steps, notes


def timed_load(concurrency, warmup_rps, duration_s):
    """Size of a timed step: (requests, time limit in s). It runs for about `duration_s` at the rate the
    warm-up saw (req/s, None if it saw none), but serves at least REQUESTS_PER_CONNECTION requests per
    connection; the time limit (3 x duration_s) bounds it when the server is slower than that."""
    rate = int(warmup_rps or 0)
    return max(concurrency * REQUESTS_PER_CONNECTION, rate * duration_s), 3 * duration_s


def warmup_requests(concurrency, duration_s):
    """The warm-up runs for duration_s: its request count only has to exceed what ab can send in that
    time (~100k req/s on one core), since ab allocates its statistics for the whole count up front."""
    return max(concurrency * REQUESTS_PER_CONNECTION, 150000 * duration_s)


def wrk_duration(requests, warmup_rps, duration_s):
    """wrk has no request count: the duration (s) that serves `requests` at the warm-up's rate, between
    duration_s and 3 x duration_s."""
    rate = max(1, int(warmup_rps or 0))
    return min(3 * duration_s, max(duration_s, -(-requests // rate)))


def port_candidates(low, high):
    """Where to look for a free server port, given the kernel's ephemeral range [low, high]: outside it
    when there is room, because ab's tens of thousands of client sockets take ports inside it."""
    if low - 1 - 10000 >= 1000:
        return 10000, low - 1
    if 65535 - high - 1 >= 1000:
        return high + 1, 65535
    return 1024, 65535
