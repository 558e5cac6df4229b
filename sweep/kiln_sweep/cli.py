"""./ab-sweep.sh's command line: options, --help, --setup, --report and the sweep itself. Each option is
declared once, in parser(): its help there is --help's text."""

import argparse
import os
import re
import sys
import textwrap
from pathlib import Path

from kiln_sweep import ROOT, SweepError, charts_venv, database, nmt, note, perf, pinning, plan, records, registry, run

DESCRIPTION = """\
Starts each SERVER on a free loopback port, loads it with ApacheBench keep-alive connections at
rising concurrency, stops it, and writes results/<date>-<servers>/: raw outputs, CSV, JSON, a PNG
chart and a self-contained HTML report. Builds a front end's jar with Maven when it is missing or
older than its sources.

SERVER (one or more):
  {front_ends}
      a kiln front end, as listed in frontends.conf (those whose module exists in this checkout)
  dummy        anchor: minimal Java NIO server with the same /hello response (sweep/DummyServer.java)
  nginx        anchor: Debian's nginx, one worker, same 10-byte body
  netty        anchor: Netty as TechEmpower's entry runs it (bench-netty/), kiln's heads on /hello,
               /plaintext and /json (left out for another --path); its own JVM flags
               (bench-netty/jvm.options), kiln's under --vps
  vertx        anchor, measured only when named: Vert.x as TechEmpower's entry runs it
               (bench-vertx/), the same paths and heads; its own JVM flags (bench-vertx/jvm.options),
               kiln's under --vps
  all          every front end present, in rounds that interleave the servers
The anchors are measured in every round unless --no-anchors; each figure is also reported as a
ratio to them, measured in the same round."""

EPILOG = """\
Environment: JAVA (the java tried first for every Java server; scripts/find-java.sh then looks in
/usr/lib/jvm for one that fits a front end's JDK range in frontends.conf, e.g. JDK 17 for comsat);
KILN_SWEEP_CGROUP_ROOT (where --vps looks for the cgroup hierarchies, default /sys/fs/cgroup; tests).
Needs: python3, ab (apache2-utils), java 17+, taskset (util-linux), ss (iproute2); nginx for the
nginx anchor, wrk for --client wrk, mvn to build. Loopback only; every run is bounded in time."""


def _steps_text(steps):
    return ",".join(map(str, steps))


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        m = re.fullmatch(r"unrecognized arguments: (\S+).*", message)
        if m:
            message = f"unknown option '{m.group(1)}'"
        m = re.fullmatch(r"argument (\S+?)(/\S+)?: (expected one argument|(.*))", message)
        if m:
            message = f"{m.group(1)} needs a value" if m.group(4) is None else m.group(4)
        raise SweepError(message, usage=True)


def _checked(pattern, what):
    def check(value):
        if not re.fullmatch(pattern, value):
            raise argparse.ArgumentTypeError(f"{what}, got '{value}'")
        return value
    return check


def _bounded(name, low, high, unit=""):
    def check(value):
        if not re.fullmatch(r"[0-9]+", value) or not low <= int(value) <= high:
            raise argparse.ArgumentTypeError(f"{name} must be {low}..{high}{unit}, got '{value}'")
        return int(value)
    return check


def _numbers(name):
    def check(value):
        if not re.fullmatch(r"[1-9][0-9]*(,[1-9][0-9]*)*", value):
            raise argparse.ArgumentTypeError(f"{name} takes numbers separated by commas, got '{value}'")
        return [int(v) for v in value.split(",")]
    return check


class _Help(argparse.RawDescriptionHelpFormatter):
    """--help: "Usage:" capitalised, the SERVER list and the environment as written, options wrapped at 100
    columns whatever the terminal's width."""

    def __init__(self, prog):
        super().__init__(prog, width=100)

    def add_usage(self, usage, actions, groups, prefix=None):
        super().add_usage(usage, actions, groups, prefix="Usage: ")

    def _split_lines(self, text, width):
        # Option names stay whole: no line ends in "--idle-".
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


def parser():
    """The command line; the front ends in --help are read from frontends.conf."""
    names = " ".join(s.name for s in registry.read_frontends(ROOT / "frontends.conf"))
    p = _Parser(prog="ab-sweep", usage="./ab-sweep.sh [options] SERVER...", description=DESCRIPTION.format(
        front_ends=names), epilog=EPILOG, formatter_class=_Help, add_help=False, allow_abbrev=False)
    p.add_argument("servers", nargs="*", metavar="SERVER", help=argparse.SUPPRESS)
    o = p.add_argument_group("Options")
    o.add_argument("--path", default="/hello", type=_checked(r"/\S*", "--path must start with / and hold no spaces"),
                   help="endpoint to load (default %(default)s), e.g. /plaintext, /db, '/hello?delay=10'")
    o.add_argument("--quick", action="store_true", help=f"tiny sweep for CI and smoke tests: "
                   f"c={_steps_text(plan.QUICK_STEPS)}, 1 s steps, one round (< 1 min)")
    o.add_argument("--latency", action="store_true", help="low-concurrency latency table instead of the sweep: "
                   f"c={_steps_text(plan.LATENCY_STEPS)}")
    o.add_argument("--vps", action="store_true", help=(
        "the sweep inside one cgroup per server run that gives the server and the client together one CPU (a "
        "cpuset) and 1 GiB of memory, as on a $5 VPS where the client shares the box; reports the cgroup's peak "
        "memory and OOM kills per step. Needs root and cgroup v1's cpuset and memory controllers writable (else "
        "exit status 2; cgroup v2 is not supported yet). Implies --no-pin."))
    o.add_argument("--memory", action="store_true", help=(
        "idle-connection memory instead of the sweep: per server, open N keep-alive connections that each "
        "complete one request and stay idle, and report heap bytes (JVMs: jcmd GC.class_histogram, live objects, "
        "after minus before) and RSS bytes per connection, and the five classes that grew most. N: "
        f"{_steps_text(plan.MEMORY_STEPS)} (capped by the open-files limit), or --concurrency; the front ends' "
        f"--idle-timeout is raised to {plan.MEMORY_IDLE_TIMEOUT_MS} ms so that none closes while they are "
        "measured"))
    o.add_argument("--subscribers", metavar="LIST", type=_numbers("--subscribers"), help=(
        "the fan-out benchmark instead of the sweep: per front end and per count N in LIST (comma-separated), a fresh "
        "server holds N server-sent-event subscribers (GET /updates/events, held by --fanout-client processes); reports heap and RSS bytes per idle subscriber, then, while GET /updates?queries=1 "
        "commits at --rate per second for --duration s (default "
        f"{plan.FANOUT_DURATION_S}), deliveries per second, commit-to-receipt latency p50/p99/max over every delivery, "
        "events lost, streams dropped, reloads, server CPU us per delivery and the client's CPU as a share of the "
        "server's. N is capped by the open-files limit "
        "(19500 under a limit of 20000). No anchors; with --vps the subscribers share the server's CPU"))
    o.add_argument("--postgres", action="store_true", help=(
        "the database table instead of the sweep: per front end named (default kilim), GET /db, /queries?queries=20 "
        "and /updates?queries=5 on it over LMDB, over PostgreSQL, two of it behind nginx over PostgreSQL, and the "
        "peer anchor Vert.x with its reactive PostgreSQL client (bench-vertx) over the same PostgreSQL (one server for "
        "the run, by scripts/postgres.sh); req/s and CPU per request of the servers and of PostgreSQL, at one "
        "--concurrency (default 256), medians over --rounds (default 3); results/<date>-postgres-<servers>/table.md. "
        "Needs the postgresql package; nothing is pinned"))
    o.add_argument("--rate", metavar="R", type=_bounded("--rate", 1, 1000, " per second"),
                   help=f"--subscribers: commits per second in the publish phase (default {plan.FANOUT_RATE})")
    o.add_argument("--fanout-client", choices=plan.FANOUT_CLIENTS, help=(
        "--subscribers: the subscriber processes' program: java (default: sweep/FanoutClient.java, NIO on one "
        "selector thread, compiled with javac by the sweep) or python (kiln_sweep.subscribers, asyncio + aiohttp on "
        "the venv's python; about 28 us of CPU per event, the bottleneck beyond a few thousand subscribers)"))
    o.add_argument("--client-processes", metavar="K", type=_bounded("--client-processes", 1, 64),
                   help="--subscribers: client processes the subscribers are spread over, N/K each (default 1 with "
                        "the java client or --vps; with the python client one per CPU the sweep may use)")
    o.add_argument("--no-jfr", dest="jfr", action="store_false", help=(
        f"do not record JFR {pinning.EVENT} events (carrier pinning >= {pinning.THRESHOLD_MS} ms) on the "
        "virtual-thread front ends (JDK range 21+: loom, jetty-loom); recorded by default"))
    o.add_argument("--perf", action="store_true", help=(
        "per timed step, Linux perf attached to the server's processes while the client runs: system calls by type "
        "(perf stat on the raw_syscalls:sys_enter and syscalls:sys_enter_* tracepoints; syscalls/req in the "
        f"table) and a flat CPU profile (perf record -F {perf.SAMPLE_HZ}, no call graphs; the top {perf.TOP} symbols "
        "in raw/<run>-perf-top.txt, JIT-compiled Java methods named by jcmd Compiler.perfmap). perf costs the "
        "server some CPU itself (the kernel counts and samples on its core), so the CPU figures of a --perf sweep "
        "are slightly perturbed: compare servers only within one --perf sweep. Needs perf (apt-get install -y "
        "linux-perf) and the right to use it (root, or kernel.perf_event_paranoid -1), else exit status 2"))
    o.add_argument("--nmt", action="store_true", help=(
        f"Java servers run with {nmt.JVM_FLAG}; after each timed step jcmd VM.native_memory summary is saved "
        "to raw/<run>-nmt.txt and the JVM's committed native memory by category (Java Heap, Class, Thread, Code, "
        "GC, ...) recorded; the table gets the total. NMT costs the JVM a little CPU and memory itself. nginx "
        "is not measured"))
    o.add_argument("--client", metavar="ab|wrk", default="ab", type=_checked(r"ab|wrk", "--client must be ab or wrk"),
                   help="load generator: ab (default; HTTP/1.0 + keep-alive) or wrk (HTTP/1.1)")
    o.add_argument("--concurrency", metavar="LIST", type=_numbers("--concurrency"), help=(
        f"comma-separated concurrency steps (default {_steps_text(plan.SWEEP_STEPS)}; with --memory the idle "
        f"connections held, default {_steps_text(plan.MEMORY_STEPS)})"))
    o.add_argument("--duration", metavar="S", type=_bounded("--duration", 1, 600, " seconds"),
                   help="seconds of each timed step and of its warm-up (default 10); with --subscribers the "
                        f"publish phase (default {plan.FANOUT_DURATION_S})")
    o.add_argument("--rounds", metavar="N", type=_bounded("--rounds", 1, 20),
                   help="sweeps over every server (default 3; 1 with --memory or --subscribers); medians are taken "
                        "over them")
    o.add_argument("--heap", metavar="SIZE",
                   type=_checked(r"[0-9]+[kKmMgG]?", "--heap takes a JVM size such as 256m or 1g"),
                   help="a fixed heap, -Xms and -Xmx SIZE, for every Java server (default: make demo's, from "
                        "deploy/jvm.options: 16 MB growing up to 256 MB, for a 1 GB VPS)")
    o.add_argument("--no-pin", dest="pin", action="store_false",
                   help="do not pin the server to one core and the client to another")
    o.add_argument("--no-anchors", dest="anchors", action="store_false",
                   help="do not measure dummy, nginx and netty (no ratios)")
    o.add_argument("--no-build", dest="build", action="store_false",
                   help="never run Maven: use the jars as they are; fail when one is missing")
    o.add_argument("--port", metavar="N", type=_bounded("--port", 1, 65535),
                   help="server port (default: a free port outside the ephemeral range)")
    o.add_argument("--out", metavar="DIR", help="results directory (default results/<date>-<servers>)")
    o.add_argument("--plan-only", action="store_true",
                   help="print the plan (servers, java, steps after file-limit capping) and exit")
    o.add_argument("--setup", action="store_true",
                   help="create the Python venv for the charts and tests (sweep/.venv) and exit")
    o.add_argument("--no-install", dest="install", action="store_false",
                   help="never create that venv: without it only CSV, JSON and the table are written")
    o.add_argument("--report", metavar="DIR",
                   help="regenerate the CSV/JSON/PNG/HTML of an earlier results directory and exit")
    o.add_argument("-h", "--help", action="help", help="this help")
    return p


def parse(argv):
    """The options (an argparse.Namespace) from the command line; raises SweepError(usage=True) on bad
    usage. --help prints the help and exits (SystemExit 0)."""
    opts = parser().parse_intermixed_args(argv)
    # --vps is a mode of its own for the sweep, and a setting of --subscribers (checked below).
    modes = [m for m, on in (("--latency", opts.latency), ("--vps", opts.vps and not opts.subscribers),
                             ("--memory", opts.memory), ("--subscribers", opts.postgres and opts.subscribers),
                             ("--postgres", opts.postgres)) if on]
    if len(modes) > 1:
        raise SweepError(f"{' and '.join(modes)} do not go together: choose one", usage=True)
    if opts.memory and any(a == "--client" or a.startswith("--client=") for a in argv):
        raise SweepError("--memory opens its own idle connections: --client does not apply", usage=True)
    if opts.subscribers:
        other = [m for m, on in (("--latency", opts.latency), ("--memory", opts.memory),
                                 ("--concurrency", opts.concurrency)) if on]
        if other:
            raise SweepError(f"--subscribers and {other[0]} do not go together: choose one", usage=True)
        if any(a == "--client" or a.startswith("--client=") for a in argv):
            raise SweepError("--subscribers runs its own subscriber processes: --client does not apply", usage=True)
    elif opts.rate or opts.client_processes or opts.fanout_client:
        flag = '--rate' if opts.rate else '--client-processes' if opts.client_processes else '--fanout-client'
        raise SweepError(f"{flag} goes with --subscribers", usage=True)
    # --perf and --nmt measure the timed runs of the load: the sweep, --vps and --latency.
    for flag, on in (("--perf", opts.perf), ("--nmt", opts.nmt)):
        other = "--memory" if opts.memory else "--subscribers" if opts.subscribers else None
        if on and other:
            raise SweepError(f"{flag} measures the timed load runs: it does not go with {other}", usage=True)
    return opts


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        opts = parse(argv)
        os.chdir(ROOT)
        if opts.setup:
            if charts_venv.setup(install=True) is None:
                return 1
            note(f"chart and test libraries ready in {charts_venv.VENV}")
            return 0
        if opts.report:
            if not any((Path(opts.report) / f).is_file() for f in (records.RUNS, records.MEMORY, records.FANOUT)):
                raise SweepError(f"{opts.report} holds no {records.RUNS}: not an ab-sweep results directory "
                                 "(directories written before the sweep moved to Python hold runs.tsv instead)")
            return charts_venv.write_report(opts.report, charts_venv.setup(opts.install))
        if opts.postgres:
            return database.main(opts)
        if not opts.servers:
            raise SweepError("name a SERVER (or all)", usage=True)
        return run.main(opts)
    except SweepError as e:
        print(f"ab-sweep: {e}", file=sys.stderr)
        if e.usage:
            print("Run ./ab-sweep.sh --help for the options.", file=sys.stderr)
            return 2
        # --vps where the cgroup controllers are not writable: 2, as the option cannot run here at all.
        return getattr(e, "exit_status", 1)
