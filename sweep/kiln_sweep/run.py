"""The sweep itself: make and print the plan (preflight), then round by round start each server, measure
it (load, or memory for --memory) and stop it (servers), recording as it goes; then the report, and
whatever is left running is stopped however the sweep ends. Method and traps: ../shared/FACTS.md,
"Benchmarking on this machine"."""

import datetime
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kiln_sweep import ROOT, SweepError, charts_venv, fanout, load, measure, memory, note, pinning, preflight, \
    records, registry, servers
from kiln_sweep.plan import MEMORY_IDLE_TIMEOUT_MS, NOFILE_ADVICE, REQUESTS_PER_CONNECTION


def main(opts):
    """The sweep the options (cli.parse) ask for; its exit status: 0, 1 when a server could not be
    measured in every round, 130 on Ctrl-C, 143 on SIGTERM. Raises SweepError when it cannot run."""
    p = preflight.Plan(opts)
    p.show()
    if opts.plan_only:
        return 0
    if p.missing:
        raise SweepError("\n".join(p.missing))
    if opts.port:
        servers.check_port_free(opts.port)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sweep = Sweep(p, Path(tempfile.mkdtemp(prefix="kiln-sweep.")))
    try:
        return sweep.measure()
    except KeyboardInterrupt:
        return 130
    finally:
        sweep.cleanup()


class Sweep:
    """One sweep of a plan (preflight.Plan), with `tmp` for the servers' data; measure() once, then
    cleanup() whatever happened."""

    def __init__(self, plan, tmp):
        self.plan, self.tmp = plan, tmp
        self.out = None
        self.servers = None
        self.client = None
        self.reported = False

    def measure(self):
        self.out = self._results_dir()
        python = charts_venv.setup(self.plan.opts.install)
        client = None
        if self.plan.fanout and self.plan.fanout_client == "python":
            if python is None:
                raise SweepError(f"--fanout-client python runs its subscribers with aiohttp from {charts_venv.VENV}, "
                                 "which is not ready: run ./ab-sweep.sh --setup (needs PyPI), or leave out --no-install")
            client = fanout.PythonClient(python, self._aiohttp())
        elif self.plan.fanout:
            # Compiled once up front, as the dummy anchor is.
            client = fanout.JavaClient.compile(self.plan.client_java, self.tmp / "fanout-client")
        self.client = client
        self.servers = servers.Servers(self.plan, self.out, self.tmp)
        self.servers.prepare()
        records.write_settings(self.out, self._settings())
        note(f"results in {self.out}")
        if self.plan.fanout:
            mode = fanout.Fanout(self.plan, self.servers, self.out, client)
        else:
            mode = (memory.Memory if self.plan.opts.memory else load.Load)(self.plan, self.servers, self.out)
        selected = self.plan.selected
        for rnd in range(1, self.plan.rounds + 1):
            # Every round visits every server, starting one further along each time, so that no server
            # always runs first (or right after the same neighbour) while the host's speed drifts.
            for k in range(len(selected)):
                mode.measure(rnd, selected[(k + rnd - 1) % len(selected)])
                time.sleep(self.plan.timing.cooldown_s)
        measured = records.read(self.out, records.MEMORY, records.MemoryRun) if self.plan.opts.memory else \
            records.read(self.out, records.FANOUT, records.FanoutRun) if self.plan.fanout else \
            records.read(self.out, records.RUNS, records.TimedRun)
        if not measured:
            raise SweepError("no step was measured (see the messages above)")
        if charts_venv.write_report(self.out, python) != 0:
            raise SweepError(f"the report of {self.out} failed (see above)")
        self.reported = True
        if records.read(self.out, records.PROBLEMS, records.Problem):
            print("ab-sweep: some servers could not be measured in every round (see the notes above)",
                  file=sys.stderr)
            return 1
        return 0

    def cleanup(self):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if self.servers is not None:
            self.servers.close()
        shutil.rmtree(self.tmp, ignore_errors=True)
        if not self.reported and self.out and any((self.out / f).is_file()
                                                  for f in (records.RUNS, records.MEMORY, records.FANOUT)):
            print(f"ab-sweep: stopped early; the steps measured so far are in {self.out} (chart them: "
                  f"./ab-sweep.sh --report {self.out})", file=sys.stderr)

    def _results_dir(self):
        o = self.plan.opts
        if o.out:
            out = Path(o.out)
        else:
            names = [s.name for s in self.plan.selected if s.name not in registry.ANCHORS]
            name = "all" if "all" in o.servers else "+".join(names) or "anchors"
            name += "-latency" if o.latency else ""
            name += "-vps" if o.vps else ""
            name += "-memory" if o.memory else ""
            name += "-fanout" if o.subscribers else ""
            name += "-quick" if o.quick else ""
            out = Path("results") / f"{datetime.datetime.now():%Y-%m-%d-%H%M%S}-{name}"
        if out.exists():
            raise SweepError(f"{out} exists already: choose another --out")
        (out / "raw").mkdir(parents=True)
        (out / "logs").mkdir()
        return out.resolve()

    def _settings(self):
        p, o = self.plan, self.plan.opts
        # One entry per java and set of flags: the anchors' flags may differ from the front ends'.
        by_flags = {}
        for s in p.selected:
            if s.name in p.javas:
                java = p.javas[s.name]
                flags = " ".join(servers.jvm_flags(s, java, o.heap, same_flags=o.vps))
                by_flags.setdefault((java, flags), []).append(s.name)
        java = "; ".join(f"{', '.join(names)}: {java.version_line} ({java.path}), flags {flags}"
                         for (java, flags), names in by_flags.items())
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=False).stdout.strip()
        return records.Settings(
            date=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            mode="latency" if o.latency else "memory" if o.memory else "fanout" if p.fanout else "sweep", quick=o.quick,
            servers=[s.name for s in p.selected], anchors=o.anchors and not p.fanout,
            path=fanout.SSE_PATH if p.fanout else o.path, client="subscribers" if p.fanout else o.client,
            wrk_threads=p.wrk_threads if o.client == "wrk" else None, rounds=p.rounds,
            duration_s=p.duration, requests_per_connection_min=REQUESTS_PER_CONNECTION,
            steps_requested=p.requested, heap=o.heap or servers.default_heap(), pinning=p.pin_text,
            nofile_soft_start=p.nofile_start, nofile_soft=p.nofile, nofile_hard=p.nofile_hard,
            plan_notes=p.notes, nofile_advice=NOFILE_ADVICE if p.capped else "",
            clk_tck=measure.CLK_TCK, idle_threshold_pct=servers.IDLE_PCT, after_window_s=p.timing.after_s,
            **measure.machine(), java=java,
            nginx=_version(["nginx", "-v"]) if any(s.kind == "nginx" for s in p.selected) else "",
            client_version=self.client.version if p.fanout else _version(["ab", "-V"] if o.client == "ab" else ["wrk", "-v"]),
            commit=commit or "none",
            vps=p.vps_text() if o.vps else "",
            pinned_threshold_ms=pinning.THRESHOLD_MS if any(p.records_pinning(s) for s in p.selected) else None,
            memory_extra=f"front ends run with --idle-timeout {MEMORY_IDLE_TIMEOUT_MS}" if o.memory else "",
            jars="; ".join(f"{s.name}: {s.jar} built {_built(ROOT / s.jar)}" for s in p.selected if s.jar),
            fanout_rate=p.rate if p.fanout else None, fanout_processes=p.client_processes if p.fanout else None,
            fanout_client=p.fanout_client if p.fanout else "",
            perf=p.perf_text() if o.perf else "", nmt=p.nmt_text() if o.nmt else "")

    @staticmethod
    def _aiohttp():
        """The subscribers' client library, as the venv has it."""
        python = charts_venv.VENV / "bin" / "python"
        return "kiln_sweep.subscribers, aiohttp " + _version([str(python), "-c", "import aiohttp; print(aiohttp.__version__)"])


def _built(path):
    """When a file was last written, to the second, in local time; "missing" when it is not there."""
    try:
        return datetime.datetime.fromtimestamp(path.stat().st_mtime).astimezone().isoformat(timespec="seconds")
    except OSError:
        return "missing"


def _version(cmd):
    """The first line a tool prints about its version."""
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    return ((out.stdout or out.stderr).splitlines() or [""])[0]
