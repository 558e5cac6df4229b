"""./ab-sweep.sh's command line: options, --help, --setup, --report and the sweep itself."""

import argparse
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional

from kiln_sweep import ROOT, SweepError, charts_venv, note, records, registry, run

HELP = """\
Usage: ./ab-sweep.sh [options] SERVER...

Starts each SERVER on a free loopback port, loads it with ApacheBench keep-alive connections at
rising concurrency, stops it, and writes results/<date>-<servers>/: raw outputs, CSV, JSON, a PNG
chart and a self-contained HTML report. Builds a front end's jar with Maven when it is missing or
older than its sources.

SERVER (one or more):
  {front_ends}
      a kiln front end, as listed in frontends.conf (those whose module exists in this checkout)
  dummy        anchor: minimal Java NIO server with the same /hello response (sweep/DummyServer.java)
  nginx        anchor: Debian's nginx, one worker, same 10-byte body
  all          every front end present, in rounds that interleave the servers
The anchors are measured in every round unless --no-anchors; each figure is also reported as a
ratio to them, measured in the same round.

Options:
  --path PATH        endpoint to load (default /hello), e.g. /plaintext, /db, '/hello?delay=10'
  --quick            tiny sweep for CI and smoke tests: c=10,100, 1 s steps, one round (< 1 min)
  --latency          low-concurrency latency table instead of the sweep: c=1,10,100,1000
  --vps              the sweep inside one cgroup per server run that gives the server and the client
                     together one CPU (a cpuset) and 1 GiB of memory, as on a $5 VPS where the client
                     shares the box; reports the cgroup's peak memory and OOM kills per step. Needs
                     root and cgroup v1's cpuset and memory controllers writable (else exit status 2;
                     cgroup v2 is not supported yet). Implies --no-pin.
  --memory           idle-connection memory instead of the sweep: per server, open N keep-alive
                     connections that each complete one request and stay idle, and report heap bytes
                     (JVMs: jcmd GC.class_histogram, live objects, after minus before) and RSS bytes per
                     connection, and the five classes that grew most. N: 19500 (capped by the
                     open-files limit), or --concurrency; the front ends' --idle-timeout is raised to
                     600000 ms so that none closes while they are measured
  --no-jfr           do not record JFR jdk.VirtualThreadPinned events (carrier pinning >= 20 ms) on the
                     virtual-thread front ends (JDK range 21+: loom, jetty-loom); recorded by default
  --client ab|wrk    load generator: ab (default; HTTP/1.0 + keep-alive) or wrk (HTTP/1.1)
  --concurrency LIST comma-separated concurrency steps (default 1000,2000,5000,10000,15000,20000;
                     with --memory the idle connections held, default 19500)
  --duration S       seconds of each timed step and of its warm-up (default 10)
  --rounds N         sweeps over every server (default 3); medians are taken over them
  --heap SIZE        JVM -Xms/-Xmx for every Java server (default 256m: a 1 GB VPS)
  --no-pin           do not pin the server to one core and the client to another
  --no-anchors       do not measure dummy and nginx (no ratios)
  --no-build         never run Maven: use the jars as they are; fail when one is missing
  --port N           server port (default: a free port outside the ephemeral range)
  --out DIR          results directory (default results/<date>-<servers>)
  --plan-only        print the plan (servers, java, steps after file-limit capping) and exit
  --setup            create the Python venv for the charts and tests (sweep/.venv) and exit
  --no-install       never create that venv: without it only CSV, JSON and the table are written
  --report DIR       regenerate the CSV/JSON/PNG/HTML of an earlier results directory and exit
  -h, --help         this help

Environment: JAVA (the java tried first for every Java server; scripts/find-java.sh then looks in
/usr/lib/jvm for one that fits a front end's JDK range in frontends.conf, e.g. JDK 17 for comsat);
KILN_SWEEP_CGROUP_ROOT (where --vps looks for the cgroup hierarchies, default /sys/fs/cgroup; tests).
Needs: python3, ab (apache2-utils), java 17+, taskset (util-linux), ss (iproute2); nginx for the
nginx anchor, wrk for --client wrk, mvn to build. Loopback only; every run is bounded in time.
"""


@dataclass
class Options:
    servers: List[str] = field(default_factory=list)
    path: str = "/hello"
    quick: bool = False
    latency: bool = False
    vps: bool = False
    memory: bool = False
    jfr: bool = True
    client: str = "ab"
    concurrency: Optional[List[int]] = None
    duration: Optional[int] = None
    rounds: Optional[int] = None
    heap: str = "256m"
    pin: bool = True
    anchors: bool = True
    build: bool = True
    port: Optional[int] = None
    out: Optional[str] = None
    plan_only: bool = False
    setup: bool = False
    install: bool = True
    report: Optional[str] = None
    help: bool = False


def help_text():
    names = [s.name for s in registry.read_frontends(ROOT / "frontends.conf")]
    return HELP.format(front_ends=" ".join(names))


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


def _steps(value):
    if not re.fullmatch(r"[1-9][0-9]*(,[1-9][0-9]*)*", value):
        raise argparse.ArgumentTypeError(f"--concurrency takes numbers separated by commas, got '{value}'")
    return [int(v) for v in value.split(",")]


def parse(argv):
    """Options from the command line; raises SweepError(usage=True) on bad usage."""
    p = _Parser(prog="ab-sweep", add_help=False, allow_abbrev=False)
    p.add_argument("servers", nargs="*")
    p.add_argument("-h", "--help", action="store_true")
    p.add_argument("--path", type=_checked(r"/\S*", "--path must start with / and hold no spaces"))
    p.add_argument("--quick", action="store_true")
    p.add_argument("--latency", action="store_true")
    p.add_argument("--vps", action="store_true")
    p.add_argument("--memory", action="store_true")
    p.add_argument("--no-jfr", dest="jfr", action="store_false")
    p.add_argument("--client", type=_checked(r"ab|wrk", "--client must be ab or wrk"))
    p.add_argument("--concurrency", type=_steps)
    p.add_argument("--duration", type=_bounded("--duration", 1, 600, " seconds"))
    p.add_argument("--rounds", type=_bounded("--rounds", 1, 20))
    p.add_argument("--heap", type=_checked(r"[0-9]+[kKmMgG]?", "--heap takes a JVM size such as 256m or 1g"))
    p.add_argument("--no-pin", dest="pin", action="store_false")
    p.add_argument("--no-anchors", dest="anchors", action="store_false")
    p.add_argument("--no-build", dest="build", action="store_false")
    p.add_argument("--port", type=_bounded("--port", 1, 65535))
    p.add_argument("--out")
    p.add_argument("--plan-only", action="store_true")
    p.add_argument("--setup", action="store_true")
    p.add_argument("--no-install", dest="install", action="store_false")
    p.add_argument("--report")
    opts = Options(**{k: v for k, v in vars(p.parse_intermixed_args(argv)).items() if v is not None})
    modes = [m for m, on in (("--latency", opts.latency), ("--vps", opts.vps), ("--memory", opts.memory)) if on]
    if len(modes) > 1:
        raise SweepError(f"{' and '.join(modes)} do not go together: choose one", usage=True)
    if opts.memory and "--client" in argv:
        raise SweepError("--memory opens its own idle connections: --client does not apply", usage=True)
    return opts


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        opts = parse(argv)
        if opts.help:
            print(help_text(), end="")
            return 0
        os.chdir(ROOT)
        if opts.setup:
            if charts_venv.setup(install=True) is None:
                return 1
            note(f"chart and test libraries ready in {charts_venv.VENV}")
            return 0
        if opts.report:
            if not (Path(opts.report) / records.RUNS).is_file():
                raise SweepError(f"{opts.report} holds no {records.RUNS}: not an ab-sweep results directory "
                                 "(directories written before the sweep moved to Python hold runs.tsv instead)")
            return charts_venv.write_report(opts.report, charts_venv.setup(opts.install))
        if not opts.servers:
            raise SweepError("name a SERVER (or all)", usage=True)
        return run.Sweep(opts).main()
    except SweepError as e:
        print(f"ab-sweep: {e}", file=sys.stderr)
        if e.usage:
            print("Run ./ab-sweep.sh --help for the options.", file=sys.stderr)
            return 2
        # --vps where the cgroup controllers are not writable: 2, as the option cannot run here at all.
        return getattr(e, "exit_status", 1)
