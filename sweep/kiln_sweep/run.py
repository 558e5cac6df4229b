"""The sweep itself: check what it needs, print the plan, then round by round start each server, run
every step against it, watch it after its last step and stop it, recording as it goes. Method and
traps: ../shared/FACTS.md, "Benchmarking on this machine"."""

import datetime
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kiln_sweep import ROOT, SWEEP_DIR, SweepError, cgroup, charts_venv, clients, idle, measure, note, pinning, plan, \
    records, registry, report, servers
from kiln_sweep.plan import step_label

# A server counts as idle below this CPU utilisation (% of one core) over a 0.5 s sample.
IDLE_PCT = 5
# A JVM front end populates its database before it prints its ready line.
READY_S = 120
# --vps tests may point the sweep at a fake cgroup tree.
CGROUP_ROOT_ENV = "KILN_SWEEP_CGROUP_ROOT"


class Timing:
    """Seconds of the after-sweep window, the longest wait for an idle server, the pause between servers."""

    def __init__(self, quick):
        self.after_s, self.idle_max_s, self.cooldown_s = (2, 5, 1) if quick else (10, 60, 5)


class Running:
    """A server this sweep started: the process, it and its children (measured), its port and log."""

    def __init__(self, server, proc, port, log, group=None, recorder=None):
        self.server, self.proc, self.port, self.log = server, proc, port, log
        self.pids = [proc.pid]
        self.group = group          # --vps: its cgroup.VpsCgroup
        self.recorder = recorder    # JDK 21+: its pinning.Recorder

    def adopt_children(self):
        """Once it serves: its children are measured with it (nginx's worker)."""
        self.pids = [self.proc.pid] + measure.children(self.proc.pid)


class Sweep:
    def __init__(self, opts):
        self.o = opts
        if opts.latency:
            default = plan.QUICK_LATENCY_STEPS if opts.quick else plan.LATENCY_STEPS
        elif opts.memory:
            default = plan.QUICK_MEMORY_STEPS if opts.quick else plan.MEMORY_STEPS
        else:
            default = plan.QUICK_STEPS if opts.quick else plan.SWEEP_STEPS
        self.requested = opts.concurrency or list(default)
        self.duration = opts.duration or (1 if opts.quick else 10)
        self.rounds = opts.rounds or (1 if opts.quick or opts.memory else 3)
        self.timing = Timing(opts.quick)
        self.running = None
        self.client = None
        self.out = None
        self.tmp = None
        self.reported = False
        self.cgroup_parents = None
        self.cgroup_count = 0
        self.live_groups = set()

    # -----------------------------------------------------------------------------------------
    # What runs, with what, and the plan
    # -----------------------------------------------------------------------------------------
    def select(self):
        known = registry.known(ROOT)
        front_ends = [s for s in known.values() if s.kind == "jar"]
        selected = []
        for name in self.o.servers:
            if name == "all":
                picks = [s for s in front_ends if registry.present(ROOT, s)]
            elif name not in known:
                raise SweepError(f"unknown SERVER '{name}'; choose from: {' '.join(known)} all", usage=True)
            elif not registry.present(ROOT, known[name]):
                raise SweepError(f"{name}: module {known[name].module} is not in this checkout")
            else:
                picks = [known[name]]
            selected += [s for s in picks if s not in selected]
        if self.o.anchors:
            selected = [known[a] for a in registry.ANCHORS] + [s for s in selected if s.name not in registry.ANCHORS]
        return selected

    def check_tools(self):
        """What is missing to run the sweep, one line each, with how to install it; and the java of each
        Java server by name."""
        missing, javas = [], {}

        def need(tool, how):
            if not shutil.which(tool):
                missing.append(f"{tool} not found: {how}")

        need("ss", "apt-get install -y iproute2")
        if self.o.memory:
            pass
        elif self.o.client == "ab":
            need("ab", "ApacheBench is in Debian's apache2-utils: apt-get install -y apache2-utils")
        else:
            need("wrk", "apt-get install -y wrk")
        if any(s.kind == "nginx" for s in self.selected):
            need("nginx", "the nginx anchor uses Debian's nginx: apt-get install -y nginx-light (or --no-anchors)")
        # One find-java.sh per JDK range, one Java per binary it names.
        by_range, by_path = {}, {}
        for s in (s for s in self.selected if s.runs_on_java):
            if s.jdk not in by_range:
                by_range[s.jdk] = None
                try:
                    path = servers.find_java(ROOT, s.jdk)
                except SweepError as e:
                    names = " ".join(x.name for x in self.selected if x.runs_on_java and x.jdk == s.jdk)
                    missing.append(f"JDK {s.jdk} (for {names}): {e}")
                else:
                    if path not in by_path:
                        by_path[path] = servers.Java(path)
                    by_range[s.jdk] = by_path[path]
            if by_range[s.jdk]:
                javas[s.name] = by_range[s.jdk]
        if self.o.memory:
            for java in dict.fromkeys(javas.values()):
                if not pinning.tool(java.path, "jcmd"):
                    names = " ".join(n for n, j in javas.items() if j is java)
                    missing.append(f"jcmd not found beside {java.path} (for {names}): --memory reads the heap with "
                                   "the jcmd of the server's own JDK; install that JDK's full package (e.g. "
                                   "openjdk-17-jdk-headless), not a JRE")
        if "dummy" in javas and not javas["dummy"].javac():
            missing.append("javac not found: the dummy anchor is compiled with javac: apt-get install -y "
                           "openjdk-17-jdk-headless")
        if self.pin:
            need("taskset", "apt-get install -y util-linux (or --no-pin)")
        return missing, javas

    def limits(self):
        """Raise the soft open-files limit to the hard one (children inherit it); the plan caps every
        step that still cannot fit."""
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        text = lambda v: "unlimited" if v == resource.RLIM_INFINITY else str(v)
        self.nofile_start, self.nofile_hard = text(soft), text(hard)
        if soft != hard:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
                note(f"open-files limit: soft {text(soft)} raised to the hard limit {text(hard)}")
            except (ValueError, OSError):
                note(f"open-files limit: could not raise soft {text(soft)} to hard {text(hard)}")
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        self.nofile = text(soft)
        return None if soft == resource.RLIM_INFINITY else soft

    def pinning(self):
        allowed = sorted(os.sched_getaffinity(0))
        self.pin = self.o.pin
        if self.o.vps:
            # Both in one cgroup on one CPU: the last one this process may use.
            self.pin = False
            self.server_cpu = self.client_cpu = None
            self.vps_cpu = allowed[-1]
            self.pin_text = f"--vps: server and client share CPU {self.vps_cpu} (a cpuset cgroup)"
            self.wrk_threads = 1
            return
        if self.o.memory:
            self.pin, self.server_cpu, self.client_cpu = False, None, None
            self.pin_text = "not pinned (--memory: idle connections, no load to keep apart)"
            return
        if self.pin and len(allowed) < 2:
            note(f"only {len(allowed)} CPU allowed: server and client share it (not pinned)")
            self.pin = False
        if self.pin:
            self.server_cpu, self.client_cpu = allowed[:2]
            self.pin_text = f"server on CPU {self.server_cpu}, client on CPU {self.client_cpu}"
        else:
            self.server_cpu = self.client_cpu = None
            self.pin_text = f"not pinned ({len(allowed)} CPUs shared by server and client)"
        # One wrk thread per core the client may use.
        self.wrk_threads = 1 if self.pin else len(allowed)

    def print_plan(self, missing):
        client = self.o.client + (f" ({self.wrk_threads} threads)" if self.o.client == "wrk" else "")
        d = self.duration
        print(f"Servers:     {' '.join(s.name for s in self.selected)}")
        if self.o.memory:
            print(f"Measure:     idle keep-alive connections, each after one GET {self.o.path} (HTTP/1.1), held by "
                  "this process; heap: jcmd GC.class_histogram (live objects) before and after; RSS: VmRSS; "
                  f"{self.pin_text}")
            print(f"Rounds:      {self.rounds}; front ends run with --idle-timeout {plan.MEMORY_IDLE_TIMEOUT_MS}")
        else:
            print(f"Client:      {client}, path {self.o.path}, {self.pin_text}")
            print(f"Rounds:      {self.rounds}; each step {d} s warm-up + ~{d} s timed (at least "
                  f"{plan.REQUESTS_PER_CONNECTION} requests per connection, at most {3 * d} s)")
        if self.o.vps:
            print(f"VPS:         {self.vps_text()}")
        print(f"JVM heap:    -Xms{self.o.heap} -Xmx{self.o.heap}")
        jfr = [s.name for s in self.selected if self.records_pinning(s)]
        if jfr:
            print(f"Pinning:     JFR {pinning.EVENT} >= {pinning.THRESHOLD_MS} ms for {', '.join(jfr)} "
                  "(--no-jfr: off)")
        for java in dict.fromkeys(self.javas.values()):
            names = ", ".join(n for n, j in self.javas.items() if j is java)
            print(f"Java:        {java.path} (Java {java.major}) for {names}")
        print(f"Open files:  soft {self.nofile}, hard {self.nofile_hard} (started with soft {self.nofile_start})")
        print("Connections:" if self.o.memory else "Steps:")
        for s in self.steps:
            print(f"  c={s.label}")
        for n in self.plan_notes:
            print(f"  {n}")
        if self.capped:
            print("".join(f"  {line}\n" for line in plan.NOFILE_ADVICE.splitlines()), end="")
        # Per server and round: start-up, per step a warm-up, a timed run (up to 3x when slow) and two
        # idle checks, then the after-sweep window and the cool-down.
        per = 5 + len(self.steps) * (2 * d + 2) + self.timing.after_s + self.timing.cooldown_s
        if self.o.memory:
            per = 10 + len(self.steps) * 30
        n = len(self.selected)
        print(f"Estimate:    about {(per * n * self.rounds + 59) // 60} min ({n} servers x {self.rounds} rounds), "
              "more for slow servers")
        for m in missing:
            print(f"Missing:     {m}")

    def vps_text(self):
        where = ", ".join(f"{p}/{cgroup.PREFIX}{os.getpid()}-N" for p in self.cgroup_parents.values())
        return (f"one cgroup (v1) per server run: cpuset.cpus={self.vps_cpu}, memory.limit_in_bytes="
                f"{cgroup.MEMORY_BYTES >> 20} MiB (and memsw where swap is accounted); server and client inside; "
                f"at {where}")

    def records_pinning(self, server):
        return self.o.jfr and not self.o.memory and pinning.applies(server, self.javas.get(server.name))

    # -----------------------------------------------------------------------------------------
    # Set-up
    # -----------------------------------------------------------------------------------------
    def results_dir(self):
        if self.o.out:
            out = Path(self.o.out)
        else:
            names = [s.name for s in self.selected if s.name not in registry.ANCHORS]
            name = "all" if "all" in self.o.servers else "+".join(names) or "anchors"
            name += "-latency" if self.o.latency else ""
            name += "-vps" if self.o.vps else ""
            name += "-memory" if self.o.memory else ""
            name += "-quick" if self.o.quick else ""
            out = Path("results") / f"{datetime.datetime.now():%Y-%m-%d-%H%M%S}-{name}"
        if out.exists():
            raise SweepError(f"{out} exists already: choose another --out")
        (out / "raw").mkdir(parents=True)
        (out / "logs").mkdir()
        return out.resolve()

    def prepare_servers(self):
        """Builds missing or outdated jars (one build per module), compiles the dummy anchor."""
        built = set()
        for s in self.selected:
            if s.kind == "jar" and s.module not in built and registry.jar_outdated(ROOT, s):
                built.add(s.module)
                if not self.o.build:
                    if not (ROOT / s.jar).is_file():
                        raise SweepError(f"{s.name}: {s.jar} is missing (--no-build)")
                    note(f"{s.name}: {s.jar} is older than its sources; using it as it is (--no-build)")
                    continue
                log = self.out / "logs" / f"build-{s.module}.log"
                note(f"building {s.jar}: mvn -B -q -DskipTests -pl {s.module} -am package (log: {log})")
                servers.build(ROOT, s, log)
            elif s.kind == "dummy":
                # Compiled once up front so the measured JVM does not also hold the source launcher's compiler.
                javac = self.javas["dummy"].javac()
                if subprocess.run([javac, "-d", str(self.tmp / "dummy"), str(SWEEP_DIR / "DummyServer.java")],
                                  check=False).returncode != 0:
                    raise SweepError("cannot compile sweep/DummyServer.java")

    def version(self, cmd):
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        return ((out.stdout or out.stderr).splitlines() or [""])[0]

    def settings(self):
        java = "; ".join(f"{', '.join(n for n, j in self.javas.items() if j is java)}: {java.version_line} "
                         f"({java.path}), flags {' '.join(java.flags(self.o.heap))}"
                         for java in dict.fromkeys(self.javas.values()))
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=False).stdout.strip()
        return records.Settings(
            date=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            mode="latency" if self.o.latency else "memory" if self.o.memory else "sweep", quick=self.o.quick,
            servers=[s.name for s in self.selected], anchors=self.o.anchors, path=self.o.path, client=self.o.client,
            wrk_threads=self.wrk_threads if self.o.client == "wrk" else None, rounds=self.rounds,
            duration_s=self.duration, requests_per_connection_min=plan.REQUESTS_PER_CONNECTION,
            steps_requested=self.requested, heap=self.o.heap, pinning=self.pin_text,
            nofile_soft_start=self.nofile_start, nofile_soft=self.nofile, nofile_hard=self.nofile_hard,
            plan_notes=self.plan_notes, nofile_advice=plan.NOFILE_ADVICE if self.capped else "",
            clk_tck=measure.CLK_TCK, idle_threshold_pct=IDLE_PCT, after_window_s=self.timing.after_s,
            **measure.machine(), java=java,
            nginx=self.version(["nginx", "-v"]) if any(s.kind == "nginx" for s in self.selected) else "",
            client_version=self.version(["ab", "-V"] if self.o.client == "ab" else ["wrk", "-v"]),
            commit=commit or "none",
            vps=self.vps_text() if self.o.vps else "",
            pinned_threshold_ms=pinning.THRESHOLD_MS if any(self.records_pinning(s) for s in self.selected) else None,
            memory_extra=f"front ends run with --idle-timeout {plan.MEMORY_IDLE_TIMEOUT_MS}" if self.o.memory else "")

    def log_command(self, cmd):
        with open(self.out / "commands.log", "a") as f:
            f.write(shlex.join(cmd) + "\n")

    def pinned(self, cmd, cpu):
        return ["taskset", "-c", str(cpu), *cmd] if self.pin else cmd

    # -----------------------------------------------------------------------------------------
    # Servers: start, probe, stop
    # -----------------------------------------------------------------------------------------
    def start_failed(self, rnd, server, log, message):
        """A server that cannot be measured this round is reported (on stderr and in problems.jsonl,
        which the report shows) and stopped; the sweep goes on with the next server."""
        if log.is_file():
            sys.stderr.write("".join(f"{line}\n" for line in log.read_text(errors="replace").splitlines()[-20:]))
        print(f"ab-sweep: {message}", file=sys.stderr, flush=True)
        records.append(self.out, records.PROBLEMS, records.Problem(rnd, server.name, message))
        self.stop_server(quiet=True)
        return None

    def start_server(self, server, rnd):
        """The Running server, or None (see start_failed) when it does not start or does not answer
        GET path with a 2xx status."""
        log = self.out / "logs" / f"r{rnd}-{server.name}.log"
        try:
            port = self.o.port or servers.free_port()
            if self.o.port:
                servers.check_port_free(port)
        except SweepError as e:
            return self.start_failed(rnd, server, log, f"{server.name}: {e}")
        data = Path(tempfile.mkdtemp(prefix=f"{server.name}.", dir=self.tmp))
        if server.kind == "nginx":
            (data / "nginx.conf").write_text(servers.nginx_conf(
                SWEEP_DIR / "nginx.conf.template", data, port, self.nofile, max(s.concurrency for s in self.steps)))
        java = self.javas.get(server.name)
        jvm_extra, args_extra, jfr = [], [], None
        if self.records_pinning(server):
            jfr = self.out / "raw" / f"r{rnd}-{server.name}-pinned.jfr"
            jvm_extra.append(pinning.jvm_flag(jfr))
        if self.o.memory and server.kind == "jar":
            args_extra += ["--idle-timeout", str(plan.MEMORY_IDLE_TIMEOUT_MS)]
        cmd = self.pinned(servers.command(server, java, self.o.heap, port, data, self.tmp / "dummy", jvm_extra,
                                          args_extra), self.server_cpu)
        group = None
        if self.o.vps:
            self.cgroup_count += 1
            group = cgroup.VpsCgroup(self.cgroup_parents, f"{cgroup.PREFIX}{os.getpid()}-{self.cgroup_count}",
                                     self.vps_cpu)
            self.live_groups.add(group)
            try:
                group.create()
            except SweepError as e:
                self.live_groups.discard(group)
                return self.start_failed(rnd, server, log, f"{server.name}: {e}")
            cmd = group.wrap(cmd)
        self.log_command(cmd)
        with open(log, "w") as f:
            proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        recorder = pinning.Recorder(java.path, proc.pid, jfr) if jfr else None
        self.running = Running(server, proc, port, log, group, recorder)
        ready_line = servers.ready_line(port)
        for _ in range(READY_S * 10):
            if proc.poll() is not None:
                if server.kind == "nginx" and (data / "error.log").is_file():
                    with open(log, "a") as f:
                        f.write((data / "error.log").read_text(errors="replace"))
                return self.start_failed(rnd, server, log, f"{server.name} exited before it was ready (log: {log})")
            text = log.read_text(errors="replace")
            if server.kind != "nginx" and re.search(r'^Exception in thread "main"', text, re.MULTILINE):
                # Its main thread died, yet other threads may keep the JVM alive without ever serving.
                return self.start_failed(rnd, server, log, f"{server.name} failed while starting (log: {log})")
            if servers.http_status(port, "/") if server.kind == "nginx" else ready_line.search(text):
                break
            time.sleep(0.1)
        else:
            return self.start_failed(rnd, server, log,
                                     f"{server.name} did not become ready within {READY_S} s (log: {log})")
        status = servers.http_status(port, self.o.path)
        if not (status or "").startswith("2"):
            return self.start_failed(rnd, server, log, f"{server.name} answered GET {self.o.path} with "
                                     f"'{status or 'nothing'}', not 2xx: not measured (every response would count "
                                     "as a failure)")
        self.running.adopt_children()
        return self.running

    def stop_server(self, quiet=False):
        """SIGTERM (the contract's clean stop), SIGKILL after 30 s; only the process this sweep started
        (nginx's master stops its own worker). Returns its exit status as a shell shows it."""
        r, self.running = self.running, None
        if r is None:
            return 0
        r.proc.terminate()
        try:
            r.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            if not quiet:
                note(f"{r.server.name} did not stop within 30 s of SIGTERM: killing it")
            r.proc.kill()
            r.proc.wait()
        if r.group is not None:
            self.remove_group(r.group)
        return 128 - r.proc.returncode if r.proc.returncode < 0 else r.proc.returncode

    def remove_group(self, group):
        """--vps: the server's cgroup goes with it (what is still inside was started there by this sweep)."""
        self.live_groups.discard(group)
        try:
            killed = group.remove()
        except SweepError as e:
            note(str(e))
            return
        if killed:
            note(f"killed process(es) {' '.join(map(str, killed))} left in {group.name} before removing it")

    def wait_idle(self):
        """(seconds waited, at 0.5 s resolution; whether the server's CPU fell under IDLE_PCT % of one
        core for 0.5 s) within the longest wait."""
        for i in range(2 * self.timing.idle_max_s):
            t0 = measure.cpu_ticks(self.running.pids)
            time.sleep(0.5)
            if (measure.cpu_ticks(self.running.pids) - t0) * 200 < IDLE_PCT * measure.CLK_TCK:
                return i / 2, True
        return self.timing.idle_max_s, False

    # -----------------------------------------------------------------------------------------
    # The load client, one step, one server's sweep
    # -----------------------------------------------------------------------------------------
    def run_client(self, concurrency, requests, time_limit_s, out, csv_file=None):
        """Runs the client on its core; returns its exit status. `timeout` bounds it even if it ignores
        its own limit."""
        url = f"http://{servers.BIND}:{self.running.port}{self.o.path}"
        cmd = self.pinned(clients.command(self.o.client, concurrency, requests, time_limit_s, url, csv_file,
                                          self.wrk_threads), self.client_cpu)
        cmd = ["timeout", "-k", "5", str(time_limit_s + 60), *cmd]
        if self.running.group is not None:
            cmd = self.running.group.wrap(cmd)
        self.log_command(cmd)
        err = Path(f"{out}.err")
        with open(out, "w") as o, open(err, "w") as e:
            self.client = subprocess.Popen(cmd, stdout=o, stderr=e, stdin=subprocess.DEVNULL)
            rc = self.client.wait()
            self.client = None
        if err.stat().st_size == 0:
            err.unlink()
        return rc

    def run_step(self, rnd, index, step):
        """One warm-up and one timed run at `step`; False when the server died during it."""
        r, c = self.running, step.concurrency
        rel = f"raw/r{rnd}-{r.server.name}-c{c}"
        base = self.out / rel
        self.wait_idle()
        if r.group is not None:
            r.group.reset_peak()
            kills0 = r.group.read().oom_kills
        self.run_client(c, plan.warmup_requests(c, self.duration), self.duration, f"{base}-warmup.txt")
        warm = clients.parse_output(f"{base}-warmup.txt", self.o.client)
        n, limit = plan.timed_load(c, warm and warm.rps, self.duration)
        if self.o.client == "wrk":
            limit = plan.wrk_duration(n, warm and warm.rps, self.duration)
        idle_wait, idle = self.wait_idle()

        ticks0, cpu0, start = measure.cpu_ticks(r.pids), measure.children_cpu_ms(), time.monotonic()
        rc = self.run_client(c, n, limit, f"{base}.txt", f"{base}.csv")
        wall, cpu1, ticks1 = time.monotonic() - start, measure.children_cpu_ms(), measure.cpu_ticks(r.pids)
        run = records.TimedRun(
            round=rnd, server=r.server.name, step=index, requested=step.requested, concurrency=c,
            cap_reason=step.cap_reason, raw=f"{rel}.txt", warmup_raw=f"{rel}-warmup.txt", client_rc=rc,
            requests_limit=n, time_limit_s=limit, wall_s=round(wall, 3), server_cpu_ticks=ticks1 - ticks0,
            client_user_ms=cpu1[0] - cpu0[0], client_sys_ms=cpu1[1] - cpu0[1],
            rss_hwm_kb=measure.status_kb("VmHWM", r.pids), rss_kb=measure.status_kb("VmRSS", r.pids),
            idle_wait_s=idle_wait, idle_reached=idle, server_alive=measure.alive(r.proc.pid))
        if r.group is not None:
            g = r.group.read()
            run.cgroup, run.cgroup_peak_bytes, run.cgroup_failcnt = r.group.name, g.peak_bytes, g.failcnt
            run.cgroup_oom_kills = None if g.oom_kills is None or kills0 is None else g.oom_kills - kills0
        if r.recorder is not None:
            self.pinned_events(run, r, f"{rel}-pinned.jfr")
        records.append(self.out, records.RUNS, run)
        self.progress(run, clients.parse_output(base.with_name(base.name + ".txt"), self.o.client), step.label)
        if not run.server_alive:
            message = f"{r.server.name} died during c={step.label} (log: {r.log})"
            note(message)
            records.append(self.out, records.PROBLEMS, records.Problem(rnd, r.server.name, message))
        return run.server_alive

    def pinned_events(self, run, r, rel_jfr):
        """The JFR pinning events new since the previous step, into the run's record."""
        if not measure.alive(r.proc.pid):
            run.pinned_error = "the server was gone: no JFR dump"
            return
        events, error = r.recorder.new_events(self.out / rel_jfr)
        run.pinned_jfr, run.pinned_error = rel_jfr, error
        if not error:
            summary = pinning.summarize(events)
            run.pinned_events, run.pinned_max_ms, run.pinned_top = summary["events"], summary["max_ms"], summary["top"]

    def progress(self, run, result, label):
        us = f"{run.server_cpu_ticks / measure.CLK_TCK * 1e6 / result.complete:.1f}" \
            if result and result.complete else "-"
        client_pct = (run.client_user_ms + run.client_sys_ms) / 10 / run.wall_s if run.wall_s else 0
        print(f"[round {run.round}/{self.rounds}] {run.server:<17} c={label:<7} "
              f"{f'{result.rps:.0f}' if result else '-':>9} req/s  failed {result.failures if result else '-'}  "
              f"p99 {f'{result.p99_ms:.2f}' if result and result.p99_ms is not None else '-'} ms  {us} us/req CPU  "
              f"RSS {run.rss_hwm_kb / 1024:.0f} MB  client CPU {client_pct:.0f}%"
              + (f"  cgroup peak {run.cgroup_peak_bytes / 1048576:.0f} MB" if run.cgroup_peak_bytes is not None else "")
              + (f"  OOM kills {run.cgroup_oom_kills}" if run.cgroup_oom_kills else "")
              + (f"  pinned {run.pinned_events}" if run.pinned_events is not None else "")
              + (f"  ({run.pinned_error})" if run.pinned_error else "")
              + (f"  (client exit {run.client_rc})" if run.client_rc else "")
              + ("" if run.idle_reached else "  (server not idle before the step)"), flush=True)

    def after_sweep(self, rnd):
        """The server's CPU in each second of the window after its last step."""
        r, pcts = self.running, []
        for _ in range(self.timing.after_s):
            t0 = measure.cpu_ticks(r.pids)
            time.sleep(1)
            pcts.append((measure.cpu_ticks(r.pids) - t0) * 100 // measure.CLK_TCK)
        records.append(self.out, records.AFTER, records.AfterWindow(rnd, r.server.name, self.timing.after_s, pcts))
        print(f"[round {rnd}/{self.rounds}] {r.server.name}: CPU in the {self.timing.after_s} s after the sweep "
              f"(% per second): {' '.join(map(str, pcts))}", flush=True)

    def sweep_server(self, rnd, server):
        r = self.start_server(server, rnd)
        if r is None:
            return
        print(f"[round {rnd}/{self.rounds}] {server.name} listening on {servers.BIND}:{r.port} "
              f"(pid {' '.join(map(str, r.pids))})", flush=True)
        for index, step in enumerate(self.steps, 1):
            if not self.run_step(rnd, index, step):
                break
        if r.proc.poll() is None:
            self.after_sweep(rnd)
        status = self.stop_server()
        # 143: a JVM without its own SIGTERM handling ends with the signal's status; still a clean stop.
        if status not in (0, 143):
            note(f"{server.name} exited with status {status} after SIGTERM (log: {r.log})")

    # -----------------------------------------------------------------------------------------
    # --memory: bytes per idle connection
    # -----------------------------------------------------------------------------------------
    def memory_server(self, rnd, server):
        r = self.start_server(server, rnd)   # it has answered one GET path: classes loaded, pools made
        if r is None:
            return
        print(f"[round {rnd}/{self.rounds}] {server.name} listening on {servers.BIND}:{r.port} "
              f"(pid {' '.join(map(str, r.pids))})", flush=True)
        java = self.javas.get(server.name)
        jcmd = pinning.tool(java.path, "jcmd") if java else None
        for step in self.steps:
            run = self.memory_step(rnd, r, step, jcmd)
            records.append(self.out, records.MEMORY, run)
            self.memory_progress(run)
            if not measure.alive(r.proc.pid):
                message = f"{server.name} died holding c={step.label} idle connections (log: {r.log})"
                note(message)
                records.append(self.out, records.PROBLEMS, records.Problem(rnd, server.name, message))
                break
        status = self.stop_server()
        if status not in (0, 143):
            note(f"{server.name} exited with status {status} after SIGTERM (log: {r.log})")

    def memory_step(self, rnd, r, step, jcmd):
        """One server holding step.concurrency idle connections, against the baseline taken just before."""
        n, name = step.concurrency, r.server.name
        rel = f"raw/r{rnd}-{name}-c{n}"
        self.wait_idle()
        run = records.MemoryRun(round=rnd, server=name, requested=step.requested, connections=n,
                                cap_reason=step.cap_reason, opened=0, established=0, still_open=0, open_s=0.0,
                                errors="", rss_before_kb=0, rss_after_kb=0)
        conns = idle.IdleConnections(servers.BIND, r.port, self.o.path)
        try:
            if jcmd:
                idle.class_histogram(jcmd, r.proc.pid, self.out / f"{rel}-histogram-before.txt")
                run.histogram_before = f"{rel}-histogram-before.txt"
            run.rss_before_kb = measure.status_kb("VmRSS", r.pids)
            start = time.monotonic()
            run.opened = conns.open(n, time_limit_s=60 + n // 200)
            run.open_s, run.errors = round(time.monotonic() - start, 2), conns.error_text()
            # Every connection has had its answer; wait until the server's side shows them all in ss.
            deadline = time.monotonic() + 30
            while idle.established(r.port) < run.opened and time.monotonic() < deadline:
                time.sleep(0.2)
            self.wait_idle()
            if jcmd:
                idle.class_histogram(jcmd, r.proc.pid, self.out / f"{rel}-histogram-after.txt")
                run.histogram_after = f"{rel}-histogram-after.txt"
            run.rss_after_kb = measure.status_kb("VmRSS", r.pids)
            run.established = idle.established(r.port)
            run.still_open = conns.still_open()
        except (ValueError, OSError, subprocess.TimeoutExpired) as e:
            run.error = str(e)
        finally:
            conns.close()
        if not run.error and run.opened == 0:
            run.error = f"no connection completed its request ({run.errors or 'no error reported'})"
        return run

    def memory_progress(self, run):
        row = report.memory_row(self.out, run)
        print(f"[round {run.round}/{self.rounds}] {run.server:<17} c={step_label(run.requested, run.connections, run.cap_reason)}"
              f"  opened {run.opened}, still open {run.still_open}, server established {run.established}"
              f"  heap {report.fmt(row['heap_bytes_per_conn'])} B/conn  RSS {report.fmt(row['rss_bytes_per_conn'])} B/conn"
              + (f"  ({run.errors})" if run.errors else "") + (f"  error: {run.error}" if run.error else ""),
              flush=True)

    # -----------------------------------------------------------------------------------------
    # The whole sweep
    # -----------------------------------------------------------------------------------------
    def main(self):
        self.selected = self.select()
        if self.o.vps:
            # Exit status 2 when the controllers are not there or not writable, before anything runs.
            root = os.environ.get(CGROUP_ROOT_ENV) or cgroup.ROOT
            self.cgroup_parents = cgroup.check(root)
            for d in cgroup.remove_stale(self.cgroup_parents):
                note(f"removed {d}, left behind by an earlier --vps sweep that was killed")
        self.pinning()
        missing, self.javas = self.check_tools()
        self.steps, self.plan_notes = plan.plan(self.limits(), "python" if self.o.memory else self.o.client,
                                                self.requested)
        if not self.steps:
            raise SweepError(f"no step can run with an open-files limit of {self.nofile}")
        self.capped = any(s.cap_reason.startswith("open-files") for s in self.steps)
        self.print_plan(missing)
        if self.o.plan_only:
            return 0
        if missing:
            raise SweepError("\n".join(missing))
        if self.o.port:
            servers.check_port_free(self.o.port)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        self.tmp = Path(tempfile.mkdtemp(prefix="kiln-sweep."))
        try:
            return self.measure()
        except KeyboardInterrupt:
            return 130
        finally:
            self.cleanup()

    def measure(self):
        self.out = self.results_dir()
        python = charts_venv.setup(self.o.install)
        self.prepare_servers()
        records.write_settings(self.out, self.settings())
        note(f"results in {self.out}")
        for rnd in range(1, self.rounds + 1):
            # Every round visits every server, starting one further along each time, so that no server
            # always runs first (or right after the same neighbour) while the host's speed drifts.
            for k in range(len(self.selected)):
                server = self.selected[(k + rnd - 1) % len(self.selected)]
                if self.o.memory:
                    self.memory_server(rnd, server)
                else:
                    self.sweep_server(rnd, server)
                time.sleep(self.timing.cooldown_s)
        measured = records.read(self.out, records.MEMORY, records.MemoryRun) if self.o.memory else \
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
        if self.client is not None:
            self.client.terminate()
            self.client.wait()
        self.stop_server(quiet=True)
        shutil.rmtree(self.tmp, ignore_errors=True)
        for group in list(self.live_groups):
            self.remove_group(group)
        if not self.reported and self.out and ((self.out / records.RUNS).is_file() or
                                               (self.out / records.MEMORY).is_file()):
            print(f"ab-sweep: stopped early; the steps measured so far are in {self.out} (chart them: "
                  f"./ab-sweep.sh --report {self.out})", file=sys.stderr)
