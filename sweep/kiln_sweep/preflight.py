"""Before a sweep starts anything: which servers, on which java, what is missing, the open-files limit,
which CPUs, the steps, and the plan printed from them. Decided once; the rest of the sweep reads it."""

import os
import resource
import shutil

from kiln_sweep import ROOT, SweepError, cgroup, nmt, note, perf, pinning, plan, registry, servers

# --vps tests may point the sweep at a fake cgroup tree.
CGROUP_ROOT_ENV = "KILN_SWEEP_CGROUP_ROOT"


class Timing:
    """Seconds of the after-sweep window, the longest wait for an idle server, the pause between servers."""

    def __init__(self, quick):
        self.after_s, self.idle_max_s, self.cooldown_s = (2, 5, 1) if quick else (10, 60, 5)


class Plan:
    """What this sweep runs and how, from the options (cli.parse). Making it notes what it changes
    (the open-files limit, stale --vps cgroups) and raises SweepError for a SERVER that is unknown or
    not in this checkout, for --vps where the cgroup controllers are not writable (exit status 2), and
    when the open-files limit leaves no step. What it finds missing (tools, JDKs) is in `missing`:
    printed with the plan, fatal only when the sweep is to run."""

    def __init__(self, opts):
        self.opts = opts
        self.fanout = bool(opts.subscribers)
        if opts.latency:
            default = plan.QUICK_LATENCY_STEPS if opts.quick else plan.LATENCY_STEPS
        elif opts.memory:
            default = plan.QUICK_MEMORY_STEPS if opts.quick else plan.MEMORY_STEPS
        else:
            default = plan.QUICK_STEPS if opts.quick else plan.SWEEP_STEPS
        self.requested = opts.subscribers or opts.concurrency or list(default)
        self.duration = opts.duration or (plan.FANOUT_DURATION_S if self.fanout else 1 if opts.quick else 10)
        self.rounds = opts.rounds or (1 if opts.quick or opts.memory or self.fanout else 3)
        self.rate = opts.rate or plan.FANOUT_RATE
        self.fanout_client = (opts.fanout_client or plan.FANOUT_CLIENTS[0]) if self.fanout else ""
        self.client_java = None     # the java (and javac) the java fan-out client is compiled and run with
        self.timing = Timing(opts.quick)
        self.left_out = []
        self.selected = self._select()
        self.cgroup_parents = self._vps_cgroups() if opts.vps else None
        # --perf: the system call tracepoints this kernel has (exit status 2 when perf cannot run).
        self.perf_events = perf.events() if opts.perf else []
        self._choose_cpus()
        self.missing, self.javas = self._check_tools()
        self.steps, self.notes = plan.plan(self._raise_file_limit(),
                                           "python" if opts.memory or self.fanout else opts.client, self.requested)
        self.notes = self.left_out + self.notes
        if not self.steps:
            raise SweepError(f"no step can run with an open-files limit of {self.nofile}")
        self.capped = any(s.cap_reason.startswith("open-files") for s in self.steps)

    # -----------------------------------------------------------------------------------------
    # Deciding
    # -----------------------------------------------------------------------------------------
    def _select(self):
        known = registry.known(ROOT)
        front_ends = [s for s in known.values() if s.kind == "jar"]
        selected = []
        for name in self.opts.servers:
            if name == "all":
                picks = [s for s in front_ends if registry.present(ROOT, s)]
            elif name not in known:
                raise SweepError(f"unknown SERVER '{name}'; choose from: {' '.join(known)} all", usage=True)
            elif not registry.present(ROOT, known[name]):
                raise SweepError(f"{name}: module {known[name].module} is not in this checkout")
            else:
                picks = [known[name]]
            selected += [s for s in picks if s not in selected]
        # The anchors have no event stream: the fan-out benchmark measures the front ends alone.
        if self.opts.anchors and not self.opts.subscribers:
            anchors = []
            for a in (known[n] for n in registry.ANCHORS):
                # An anchor that does not serve the path is left out, unless it was named.
                if registry.serves(a, self.opts.path) or a.name in self.opts.servers:
                    anchors.append(a)
                else:
                    self.left_out.append(f"anchor {a.name} left out: it serves {', '.join(a.paths)} only, not "
                                         f"{self.opts.path}")
            selected = anchors + [s for s in selected if s.name not in registry.ANCHORS]
        return selected

    def _vps_cgroups(self):
        """The parent group of each controller; exit status 2 when the controllers are not there or not
        writable, before anything runs."""
        parents = cgroup.check(os.environ.get(CGROUP_ROOT_ENV) or cgroup.ROOT)
        for d in cgroup.remove_stale(parents):
            note(f"removed {d}, left behind by an earlier --vps sweep that was killed")
        return parents

    def _choose_cpus(self):
        allowed = sorted(os.sched_getaffinity(0))
        self.pin = self.opts.pin
        # --subscribers: the subscriber processes, one per CPU they may use unless --client-processes.
        # The java client's one selector thread keeps up with 20,000 subscribers: one process unless asked.
        self.client_processes = self.opts.client_processes or (
            1 if self.opts.vps or (self.fanout and self.fanout_client == "java") else len(allowed))
        if self.opts.vps:
            # Both in one cgroup on one CPU: the last one this process may use.
            self.pin = False
            self.server_cpu = self.client_cpu = None
            self.vps_cpu = allowed[-1]
            self.pin_text = f"--vps: server and client share CPU {self.vps_cpu} (a cpuset cgroup)"
            self.wrk_threads = 1
            return
        if self.opts.memory:
            self.pin, self.server_cpu, self.client_cpu = False, None, None
            self.pin_text = "not pinned (--memory: idle connections, no load to keep apart)"
            return
        if self.fanout:
            # Not pinned: the subscriber processes share every CPU with the server, whose own CPU time is what
            # is compared (the clients' share of it is reported beside it).
            self.pin, self.server_cpu, self.client_cpu = False, None, None
            self.pin_text = (f"not pinned (--subscribers: the server and {self.client_processes} subscriber "
                             f"process(es) share {len(allowed)} CPU(s))")
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

    def _check_tools(self):
        """What is missing to run the sweep, one line each, with how to install it; and the java of each
        Java server by name."""
        missing, javas = [], {}

        def need(tool, how):
            if not shutil.which(tool):
                missing.append(f"{tool} not found: {how}")

        need("ss", "apt-get install -y iproute2")
        if self.opts.memory or self.fanout:
            pass
        elif self.opts.client == "ab":
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
        if self.opts.memory or self.fanout or self.opts.nmt or self.opts.perf:
            mode = "--memory" if self.opts.memory else "--subscribers" if self.fanout else \
                "--nmt" if self.opts.nmt else "--perf"
            for java in dict.fromkeys(javas.values()):
                if not pinning.tool(java.path, "jcmd"):
                    names = " ".join(n for n, j in javas.items() if j is java)
                    what = "reads the heap" if self.opts.memory or self.fanout else \
                        "reads the native memory" if self.opts.nmt else "names the JIT-compiled methods"
                    missing.append(f"jcmd not found beside {java.path} (for {names}): {mode} {what} with "
                                   "the jcmd of the server's own JDK; install that JDK's full package (e.g. "
                                   "openjdk-17-jdk-headless), not a JRE")
        if self.fanout_client == "java":
            try:
                self.client_java = servers.Java(servers.find_java(ROOT, "17+"))
            except SweepError as e:
                missing.append(f"JDK 17+ for the fan-out client (sweep/FanoutClient.java): {e}")
            else:
                if not self.client_java.javac():
                    missing.append(f"javac not found beside {self.client_java.path}: the fan-out client "
                                   "(sweep/FanoutClient.java) is compiled with javac: apt-get install -y "
                                   "openjdk-17-jdk-headless (or --fanout-client python)")
        if "dummy" in javas and not javas["dummy"].javac():
            missing.append("javac not found: the dummy anchor is compiled with javac: apt-get install -y "
                           "openjdk-17-jdk-headless")
        if self.pin:
            need("taskset", "apt-get install -y util-linux (or --no-pin)")
        return missing, javas

    def _raise_file_limit(self):
        """Raise the soft open-files limit to the hard one (children inherit it); the plan caps every
        step that still cannot fit. Returns the limit (None: unlimited)."""
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

    # -----------------------------------------------------------------------------------------
    # What the rest of the sweep asks
    # -----------------------------------------------------------------------------------------
    def records_pinning(self, server):
        """Whether `server` runs with a JFR recording of carrier pinning."""
        return (self.opts.jfr and not self.opts.memory and not self.fanout
                and pinning.applies(server, self.javas.get(server.name)))

    def jvm_extra(self, server):
        """JVM options a Java server gets for what this sweep measures besides the load (JFR is added by
        Servers.start, which names its file)."""
        return [nmt.JVM_FLAG] if self.opts.nmt and server.runs_on_java else []

    def server_args(self, server):
        """What a server's own command line gets beyond its usual arguments."""
        if self.opts.memory and server.kind == "jar":
            return ["--idle-timeout", str(plan.MEMORY_IDLE_TIMEOUT_MS)]
        return []

    def on_server_cpu(self, cmd):
        return self._on_cpu(cmd, self.server_cpu)

    def on_client_cpu(self, cmd):
        return self._on_cpu(cmd, self.client_cpu)

    def _on_cpu(self, cmd, cpu):
        return ["taskset", "-c", str(cpu), *cmd] if self.pin else cmd

    def perf_text(self):
        names = [perf.syscall_name(e) for e in self.perf_events if e != perf.TOTAL]
        return (f"per timed run, on the server's processes: perf stat (every system call, and {', '.join(names)}) "
                f"and perf record -F {perf.SAMPLE_HZ} (no call graphs); CPU figures slightly perturbed by perf")

    def nmt_text(self):
        names = ", ".join(s.name for s in self.selected if s.runs_on_java)
        return f"{nmt.JVM_FLAG}, jcmd VM.native_memory summary after each timed run ({names or 'no JVM'})"

    def vps_text(self):
        where = ", ".join(f"{p}/{cgroup.PREFIX}{os.getpid()}-N" for p in self.cgroup_parents.values())
        return (f"one cgroup (v1) per server run: cpuset.cpus={self.vps_cpu}, memory.limit_in_bytes="
                f"{cgroup.MEMORY_BYTES >> 20} MiB (and memsw where swap is accounted); server and client inside; "
                f"at {where}")

    # -----------------------------------------------------------------------------------------
    # The printed plan
    # -----------------------------------------------------------------------------------------
    def show(self):
        o, d = self.opts, self.duration
        client = o.client + (f" ({self.wrk_threads} threads)" if o.client == "wrk" else "")
        print(f"Servers:     {' '.join(s.name for s in self.selected)}")
        if self.fanout:
            print(f"Measure:     fan-out: N subscribers of GET /updates/events (server-sent events) over "
                  f"{self.client_processes} client process(es) ("
                  + ("sweep/FanoutClient.java: NIO, one selector thread" if self.fanout_client == "java" else
                     "python -m kiln_sweep.subscribers: asyncio + aiohttp on sweep/.venv")
                  + "); idle: heap (jcmd GC.class_histogram, live objects) and RSS per subscriber; then "
                  f"GET /updates?queries=1 at {self.rate}/s for {d} s: deliveries/s, commit-to-receipt latency "
                  "p50/p99/max, lost events, dropped streams, reloads, server CPU per delivery, the client's CPU "
                  "share; "
                  f"{self.pin_text}")
            print(f"Rounds:      {self.rounds}; a fresh server per subscriber count; connect within 30 s + N/200 s, "
                  "drain at most 30 s after the last commit")
        elif o.memory:
            print(f"Measure:     idle keep-alive connections, each after one GET {o.path} (HTTP/1.1), held by "
                  "this process; heap: jcmd GC.class_histogram (live objects) before and after; RSS: VmRSS; "
                  f"{self.pin_text}")
            print(f"Rounds:      {self.rounds}; front ends run with --idle-timeout {plan.MEMORY_IDLE_TIMEOUT_MS}")
        else:
            print(f"Client:      {client}, path {o.path}, {self.pin_text}")
            print(f"Rounds:      {self.rounds}; each step {d} s warm-up + ~{d} s timed (at least "
                  f"{plan.REQUESTS_PER_CONNECTION} requests per connection, at most {3 * d} s)")
        if o.vps:
            print(f"VPS:         {self.vps_text()}")
        print(f"JVM flags:   @{servers.JVM_OPTIONS.relative_to(ROOT)}" + (f" -Xms{o.heap} -Xmx{o.heap}" if o.heap else
                                                                         f" (heap up to {servers.default_heap()})"))
        for s in self.selected:
            if s.jvm_options:
                print(f"             {s.name}: " + ("the same (--vps: every JVM on make demo's flags)" if o.vps else
                                                    f"its own, @{s.jvm_options}" + (f" -Xms{o.heap} -Xmx{o.heap}"
                                                                                    if o.heap else "")))
        jfr = [s.name for s in self.selected if self.records_pinning(s)]
        if jfr:
            print(f"Pinning:     JFR {pinning.EVENT} >= {pinning.THRESHOLD_MS} ms for {', '.join(jfr)} "
                  "(--no-jfr: off)")
        if o.perf:
            print(f"Perf:        {self.perf_text()}")
        if o.nmt:
            print(f"NMT:         {self.nmt_text()}")
        for java in dict.fromkeys(self.javas.values()):
            names = ", ".join(n for n, j in self.javas.items() if j is java)
            print(f"Java:        {java.path} (Java {java.major}) for {names}")
        print(f"Open files:  soft {self.nofile}, hard {self.nofile_hard} (started with soft {self.nofile_start})")
        print("Subscribers:" if self.fanout else "Connections:" if o.memory else "Steps:")
        for s in self.steps:
            print(f"  {'n' if self.fanout else 'c'}={s.label}")
        for n in self.notes:
            print(f"  {n}")
        if self.fanout and self.nofile != "unlimited":
            print(f"  at most {int(self.nofile) - plan.FD_SPARE} subscribers under this open-files limit ({self.nofile} "
                  f"- {plan.FD_SPARE} kept for the rest): one descriptor each in the server and in a client")
        if self.capped:
            print("".join(f"  {line}\n" for line in plan.NOFILE_ADVICE.splitlines()), end="")
        # Per server and round: start-up, per step a warm-up, a timed run (up to 3x when slow) and two
        # idle checks, then the after-sweep window and the cool-down.
        per = 5 + len(self.steps) * (2 * d + 2) + self.timing.after_s + self.timing.cooldown_s
        if o.memory:
            per = 10 + len(self.steps) * 30
        if self.fanout:
            per = sum(60 + s.concurrency // 500 + d + 30 for s in self.steps)
        n = len(self.selected)
        print(f"Estimate:    about {(per * n * self.rounds + 59) // 60} min ({n} servers x {self.rounds} rounds), "
              "more for slow servers")
        for m in self.missing:
            print(f"Missing:     {m}")
