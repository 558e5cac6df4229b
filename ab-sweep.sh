#!/usr/bin/env bash
# ab-sweep.sh — the keep-alive concurrency sweep: how each kiln front end holds up under 1000 to
# 20000 keep-alive connections, beside two anchors measured in the same rounds (a minimal Java NIO
# server and nginx). Run `./ab-sweep.sh --help`. Method and traps: ../shared/FACTS.md, "Benchmarking
# on this machine"; the README's "Benchmark sweep" section explains the report.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SWEEP_DIR=$ROOT/sweep
# shellcheck source=sweep/lib.sh
source "$SWEEP_DIR/lib.sh"
# shellcheck source=sweep/servers.sh
source "$SWEEP_DIR/servers.sh"

LMDB_FLAGS=(--add-opens java.base/java.nio=ALL-UNNAMED --add-exports java.base/sun.nio.ch=ALL-UNNAMED)
JAVA=${JAVA:-java}
BIND=127.0.0.1

usage() {
  cat <<EOF
Usage: ./ab-sweep.sh [options] SERVER...

Starts each SERVER on a free loopback port, loads it with ApacheBench keep-alive connections at
rising concurrency, stops it, and writes results/<date>-<servers>/: raw outputs, CSV, JSON, a PNG
chart and a self-contained HTML report. Builds a front end's jar with Maven when it is missing or
older than its sources.

SERVER (one or more):
  ${SWEEP_FRONT_ENDS[*]}
      a kiln front end (those whose module exists in this checkout)
  dummy        anchor: minimal Java NIO server with the same /hello response (sweep/DummyServer.java)
  nginx        anchor: Debian's nginx, one worker, same 10-byte body
  all          every front end present, in rounds that interleave the servers
The anchors are measured in every round unless --no-anchors; each figure is also reported as a
ratio to them, measured in the same round.

Options:
  --path PATH        endpoint to load (default /hello), e.g. /plaintext, /db, '/hello?delay=10'
  --quick            tiny sweep for CI and smoke tests: c=10,100, 1 s steps, one round (< 1 min)
  --latency          low-concurrency latency table instead of the sweep: c=1,10,100,1000
  --client ab|wrk    load generator: ab (default; HTTP/1.0 + keep-alive) or wrk (HTTP/1.1)
  --concurrency LIST comma-separated concurrency steps (default 1000,2000,5000,10000,15000,20000)
  --duration S       seconds of each timed step and of its warm-up (default 10)
  --rounds N         sweeps over every server (default 3); medians are taken over them
  --heap SIZE        JVM -Xms/-Xmx for every Java server (default 256m: a 1 GB VPS)
  --no-pin           do not pin the server to one core and the client to another
  --no-anchors       do not measure dummy and nginx (no ratios)
  --no-build         never run Maven: use the jars as they are; fail when one is missing
  --port N           server port (default: a free port outside the ephemeral range)
  --out DIR          results directory (default results/<date>-<servers>)
  --plan-only        print the plan (servers, steps after file-limit capping) and exit
  --setup            create the Python venv for the charts (sweep/.venv) and exit
  --no-install       never create that venv: without it only CSV, JSON and the table are written
  --report DIR       regenerate the CSV/JSON/PNG/HTML of an earlier results directory and exit
  -h, --help         this help

Environment: JAVA (java binary, default java).
Needs: ab (apache2-utils), java 17+, taskset (util-linux), ss (iproute2), python3; nginx for the
nginx anchor, wrk for --client wrk, mvn to build. Loopback only; every run is bounded in time.
EOF
}

die() {
  echo "ab-sweep: $*" >&2
  exit 1
}

note() {
  echo "ab-sweep: $*"
}

# ---------------------------------------------------------------------------------------------
# Options
# ---------------------------------------------------------------------------------------------
SERVERS=()
URL_PATH=/hello
QUICK=0
LATENCY=0
CLIENT=ab
CONCURRENCY=""
DURATION=""
ROUNDS=""
HEAP=256m
PIN=1
ANCHORS=1
BUILD=1
PORT_OPT=""
OUT=""
PLAN_ONLY=0
SETUP_ONLY=0
INSTALL=1
REPORT_DIR=""

need_value() {
  [[ $# -ge 2 && -n $2 ]] || { echo "ab-sweep: $1 needs a value" >&2; usage >&2; exit 2; }
}

while (($#)); do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --path) need_value "$@"; URL_PATH=$2; shift ;;
    --quick) QUICK=1 ;;
    --latency) LATENCY=1 ;;
    --client) need_value "$@"; CLIENT=$2; shift ;;
    --concurrency) need_value "$@"; CONCURRENCY=$2; shift ;;
    --duration) need_value "$@"; DURATION=$2; shift ;;
    --rounds) need_value "$@"; ROUNDS=$2; shift ;;
    --heap) need_value "$@"; HEAP=$2; shift ;;
    --no-pin) PIN=0 ;;
    --no-anchors) ANCHORS=0 ;;
    --no-build) BUILD=0 ;;
    --port) need_value "$@"; PORT_OPT=$2; shift ;;
    --out) need_value "$@"; OUT=$2; shift ;;
    --plan-only) PLAN_ONLY=1 ;;
    --setup) SETUP_ONLY=1 ;;
    --no-install) INSTALL=0 ;;
    --report) need_value "$@"; REPORT_DIR=$2; shift ;;
    -*) echo "ab-sweep: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    *) SERVERS+=("$1") ;;
  esac
  shift
done

bad_usage() {
  echo "ab-sweep: $*" >&2
  echo "Run ./ab-sweep.sh --help for the options." >&2
  exit 2
}

[[ $CLIENT == ab || $CLIENT == wrk ]] || bad_usage "--client must be ab or wrk, got '$CLIENT'"
[[ $URL_PATH == /* && $URL_PATH != *[[:space:]]* ]] || bad_usage "--path must start with / and hold no spaces, got '$URL_PATH'"
[[ $HEAP =~ ^[0-9]+[kKmMgG]?$ ]] || bad_usage "--heap takes a JVM size such as 256m or 1g, got '$HEAP'"
[[ -z $PORT_OPT || ($PORT_OPT =~ ^[0-9]+$ && PORT_OPT -ge 1 && PORT_OPT -le 65535) ]] ||
  bad_usage "--port must be 1..65535, got '$PORT_OPT'"

# Step list, durations and waits: the study's defaults, --quick, --latency.
if ((LATENCY)); then
  DEFAULT_STEPS=1,10,100,1000
  ((QUICK)) && DEFAULT_STEPS=1,10
else
  DEFAULT_STEPS=1000,2000,5000,10000,15000,20000
  ((QUICK)) && DEFAULT_STEPS=10,100
fi
if ((QUICK)); then
  : "${DURATION:=1}" "${ROUNDS:=1}"
  AFTER_S=2 IDLE_MAX_S=5 COOLDOWN_S=1
else
  : "${DURATION:=10}" "${ROUNDS:=3}"
  AFTER_S=10 IDLE_MAX_S=60 COOLDOWN_S=5
fi
: "${CONCURRENCY:=$DEFAULT_STEPS}"
[[ $CONCURRENCY =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || bad_usage "--concurrency takes numbers separated by commas, got '$CONCURRENCY'"
[[ $DURATION =~ ^[1-9][0-9]*$ && DURATION -le 600 ]] || bad_usage "--duration must be 1..600 seconds, got '$DURATION'"
[[ $ROUNDS =~ ^[1-9][0-9]*$ && ROUNDS -le 20 ]] || bad_usage "--rounds must be 1..20, got '$ROUNDS'"
IFS=, read -r -a REQUESTED_STEPS <<<"$CONCURRENCY"
# A server counts as idle below this CPU utilisation (% of one core) over a 0.5 s sample.
IDLE_PCT=5

cd "$ROOT"

# ---------------------------------------------------------------------------------------------
# Python for the report: a venv with the pinned chart libraries, created on first use.
# ---------------------------------------------------------------------------------------------
VENV=$SWEEP_DIR/.venv
REQUIREMENTS=$SWEEP_DIR/requirements.txt
REPORT_PY=""
CHARTS=1

venv_ready() {
  [[ -x $VENV/bin/python && -f $VENV/.requirements.sha256 ]] &&
    [[ $(cat "$VENV/.requirements.sha256") == "$(sha256sum <"$REQUIREMENTS")" ]]
}

setup_venv() {
  command -v python3 >/dev/null || die "python3 not found: apt-get install -y python3 python3-venv"
  if venv_ready; then
    REPORT_PY=$VENV/bin/python
    return
  fi
  if ((!INSTALL)); then
    note "no chart libraries in $VENV (--no-install): writing CSV, JSON and the table only; run ./ab-sweep.sh --setup for the PNG and HTML"
    REPORT_PY=python3 CHARTS=0
    return
  fi
  note "first run: creating $VENV with the chart libraries pinned in sweep/requirements.txt (matplotlib, plotly, Jinja2; about a minute, needs PyPI)"
  if python3 -m venv --clear "$VENV" &&
    "$VENV/bin/pip" install --disable-pip-version-check --quiet --timeout 30 --retries 2 -r "$REQUIREMENTS"; then
    sha256sum <"$REQUIREMENTS" >"$VENV/.requirements.sha256"
    REPORT_PY=$VENV/bin/python
  else
    note "could not install the chart libraries (see pip's message above): writing CSV, JSON and the table only. Fix it and run ./ab-sweep.sh --setup, then ./ab-sweep.sh --report DIR"
    REPORT_PY=python3 CHARTS=0
  fi
}

run_report() {
  local args=("$SWEEP_DIR/report.py" report "$1")
  ((CHARTS)) || args+=(--no-charts)
  "$REPORT_PY" "${args[@]}"
}

if ((SETUP_ONLY)); then
  setup_venv
  ((CHARTS)) || exit 1
  note "chart libraries ready in $VENV"
  exit 0
fi
if [[ -n $REPORT_DIR ]]; then
  [[ -f $REPORT_DIR/runs.tsv ]] || die "$REPORT_DIR holds no runs.tsv: not an ab-sweep results directory"
  setup_venv
  run_report "$REPORT_DIR"
  exit 0
fi

# ---------------------------------------------------------------------------------------------
# Servers, tools, file limits, the plan
# ---------------------------------------------------------------------------------------------
((${#SERVERS[@]})) || bad_usage "name a SERVER (or all)"
SELECTED=()
add_server() {
  local s
  for s in "${SELECTED[@]}"; do [[ $s == "$1" ]] && return; done
  SELECTED+=("$1")
}
for s in "${SERVERS[@]}"; do
  if [[ $s == all ]]; then
    for f in "${SWEEP_FRONT_ENDS[@]}"; do
      if sweep_server_present "$f"; then add_server "$f"; fi
    done
  elif ! sweep_server_def "$s"; then
    bad_usage "unknown SERVER '$s'; choose from: ${SWEEP_FRONT_ENDS[*]} ${SWEEP_ANCHORS[*]} all"
  elif ! sweep_server_present "$s"; then
    die "$s: module $SRV_MODULE is not in this checkout"
  else
    add_server "$s"
  fi
done
if ((ANCHORS)); then
  ANCHORED=("${SWEEP_ANCHORS[@]}")
  for s in "${SELECTED[@]}"; do
    [[ $s == dummy || $s == nginx ]] || ANCHORED+=("$s")
  done
  SELECTED=("${ANCHORED[@]}")
fi

need_tool() {
  command -v "$1" >/dev/null || die "$1 not found: $2"
}
need_tool ss "apt-get install -y iproute2"
if [[ $CLIENT == ab ]]; then
  need_tool ab "ApacheBench is in Debian's apache2-utils: apt-get install -y apache2-utils"
else
  need_tool wrk "apt-get install -y wrk"
fi
NEEDS_JAVA=0 NEEDS_NGINX=0
for s in "${SELECTED[@]}"; do
  sweep_server_def "$s"
  if [[ $SRV_KIND == nginx ]]; then NEEDS_NGINX=1; else NEEDS_JAVA=1; fi
done
if ((NEEDS_NGINX)); then
  need_tool nginx "the nginx anchor uses Debian's nginx: apt-get install -y nginx-light (or --no-anchors)"
  need_tool pgrep "apt-get install -y procps"
fi
if ((NEEDS_JAVA)); then
  need_tool "$JAVA" "install a JDK 17+: apt-get install -y openjdk-17-jdk-headless"
  JAVA_VERSION_LINE=$("$JAVA" -version 2>&1 | sed -n 1p)
  [[ $JAVA_VERSION_LINE =~ \"([0-9]+)(\.[0-9]+)*[^\"]*\" ]] || die "cannot read the version of $JAVA: $JAVA_VERSION_LINE"
  JAVA_MAJOR=${BASH_REMATCH[1]}
  ((JAVA_MAJOR >= 17)) || die "$JAVA is Java $JAVA_MAJOR; kiln needs 17 or newer (set JAVA=/path/to/java)"
  JAVA_FLAGS=("-Xms$HEAP" "-Xmx$HEAP" "${LMDB_FLAGS[@]}")
  ((JAVA_MAJOR >= 22)) && JAVA_FLAGS+=(--enable-native-access=ALL-UNNAMED)
  for s in "${SELECTED[@]}"; do
    sweep_server_def "$s"
    if [[ -n $SRV_JDK && $JAVA_MAJOR != "$SRV_JDK" ]]; then
      die "$s runs on JDK $SRV_JDK only (FACTS.md: Quasar cannot run on 19+), but $JAVA is $JAVA_MAJOR: set JAVA=/usr/lib/jvm/java-$SRV_JDK-openjdk-amd64/bin/java or leave $s out"
    fi
  done
fi

# Pinning: the server on the first allowed core, the client on the second (FACTS.md).
ALLOWED_CPUS=()
mapfile -t ALLOWED_CPUS < <(sweep_expand_cpus "$(awk '/^Cpus_allowed_list:/ {print $2}' /proc/self/status)")
if ((PIN)) && ((${#ALLOWED_CPUS[@]} < 2)); then
  note "only ${#ALLOWED_CPUS[@]} CPU allowed: server and client share it (not pinned)"
  PIN=0
fi
if ((PIN)); then
  need_tool taskset "apt-get install -y util-linux (or --no-pin)"
  SERVER_CPU=${ALLOWED_CPUS[0]} CLIENT_CPU=${ALLOWED_CPUS[1]}
  PIN_TEXT="server on CPU $SERVER_CPU, client on CPU $CLIENT_CPU"
else
  SERVER_CPU="" CLIENT_CPU=""
  PIN_TEXT="not pinned (${#ALLOWED_CPUS[@]} CPUs shared by server and client)"
fi
if [[ $CLIENT == wrk ]]; then
  # One wrk thread per core the client may use.
  if ((PIN)); then WRK_THREADS=1; else WRK_THREADS=${#ALLOWED_CPUS[@]}; fi
fi

# File limits: raise the soft limit to the hard one, then cap every step that cannot fit.
NOFILE_SOFT_BEFORE=$(ulimit -Sn)
NOFILE_HARD=$(ulimit -Hn)
if [[ $NOFILE_SOFT_BEFORE != "$NOFILE_HARD" ]]; then
  if ulimit -Sn "$NOFILE_HARD" 2>/dev/null; then
    note "open-files limit: soft $NOFILE_SOFT_BEFORE raised to the hard limit $NOFILE_HARD"
  else
    note "open-files limit: could not raise soft $NOFILE_SOFT_BEFORE to hard $NOFILE_HARD"
  fi
fi
NOFILE=$(ulimit -Sn)
PLAN=()
mapfile -t PLAN < <(sweep_plan "$NOFILE" "$CLIENT" "${REQUESTED_STEPS[@]}" 2>/dev/null)
PLAN_NOTES=$(sweep_plan "$NOFILE" "$CLIENT" "${REQUESTED_STEPS[@]}" 2>&1 >/dev/null)
((${#PLAN[@]})) || die "no step can run with an open-files limit of $NOFILE"
CAPPED=0

print_plan() {
  local line requested ran reason
  echo "Servers:     ${SELECTED[*]}"
  echo "Client:      $CLIENT$([[ $CLIENT == wrk ]] && echo " ($WRK_THREADS threads)"), path $URL_PATH, $PIN_TEXT"
  echo "Rounds:      $ROUNDS; each step ${DURATION} s warm-up + ~${DURATION} s timed (at least $SWEEP_REQUESTS_PER_CONNECTION requests per connection, at most $((3 * DURATION)) s)"
  echo "JVM heap:    -Xms$HEAP -Xmx$HEAP"
  echo "Open files:  soft $NOFILE, hard $NOFILE_HARD (started with soft $NOFILE_SOFT_BEFORE)"
  echo "Steps:"
  for line in "${PLAN[@]}"; do
    IFS=$'\t' read -r requested ran reason <<<"$line"
    echo "  c=$(sweep_step_label "$requested" "$ran" "$reason")"
    [[ $reason == open-files* ]] && CAPPED=1
  done
  if [[ -n $PLAN_NOTES ]]; then
    while IFS= read -r line; do echo "  $line"; done <<<"$PLAN_NOTES"
  fi
  if ((CAPPED)); then
    sweep_nofile_advice | sed 's/^/  /'
  fi
  # Per server and round: start-up, per step a warm-up, a timed run (up to 3x when slow) and two
  # idle checks, then the after-sweep window and the cool-down.
  local per=$((5 + ${#PLAN[@]} * (2 * DURATION + 2) + AFTER_S + COOLDOWN_S))
  echo "Estimate:    about $(((per * ${#SELECTED[@]} * ROUNDS + 59) / 60)) min (${#SELECTED[@]} servers x $ROUNDS rounds), more for slow servers"
  return 0
}
print_plan
((PLAN_ONLY)) && exit 0
if [[ -n $PORT_OPT && -n $(ss -Htan exclude time-wait "sport = :$PORT_OPT" | sed -n 1p) ]]; then
  ss -Htan exclude time-wait "sport = :$PORT_OPT" | sed -n 1,3p >&2
  die "port $PORT_OPT is in use (above); choose another --port or leave it out to pick a free one"
fi

# ---------------------------------------------------------------------------------------------
# Set-up: results directory, temp dir, cleanup, venv, builds
# ---------------------------------------------------------------------------------------------
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kiln-sweep.XXXXXX")
SRV_PID="" SRV_PIDS=() SRV_NAME="" CLIENT_PID="" REPORTED=0

proc_alive() {
  local stat
  { IFS= read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
  stat=${stat##*) }
  [[ ${stat:0:1} != Z ]]
}

# stop_server [quiet]: SIGTERM (the contract's clean stop), SIGKILL after 30 s. Only SRV_PID, the
# process this script started (nginx's master stops its own worker).
stop_server() {
  [[ -n $SRV_PID ]] || return 0
  local i rc=0
  kill -TERM "$SRV_PID" 2>/dev/null || true
  for ((i = 0; i < 300; i++)); do
    proc_alive "$SRV_PID" || break
    sleep 0.1
  done
  if proc_alive "$SRV_PID"; then
    [[ ${1:-} == quiet ]] || note "$SRV_NAME did not stop within 30 s of SIGTERM: killing it"
    kill -KILL "$SRV_PID" 2>/dev/null || true
  fi
  wait "$SRV_PID" 2>/dev/null || rc=$?
  SRV_EXIT=$rc
  SRV_PID="" SRV_PIDS=()
}

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [[ -n $CLIENT_PID ]]; then
    kill -TERM "$CLIENT_PID" 2>/dev/null || true
    wait "$CLIENT_PID" 2>/dev/null || true
  fi
  [[ -n $SRV_PID ]] && stop_server quiet
  rm -rf "$TMP"
  if ((rc != 0 && !REPORTED)) && [[ -n $OUT && -f $OUT/runs.tsv ]] && (($(wc -l <"$OUT/runs.tsv") > 1)); then
    echo "ab-sweep: stopped early; the steps measured so far are in $OUT (chart them: ./ab-sweep.sh --report $OUT)" >&2
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [[ -z $OUT ]]; then
  NAMES=()
  for s in "${SELECTED[@]}"; do [[ $s == dummy || $s == nginx ]] || NAMES+=("$s"); done
  if [[ " ${SERVERS[*]} " == *" all "* ]]; then NAME=all; elif ((${#NAMES[@]})); then NAME=$(IFS=+; echo "${NAMES[*]}"); else NAME=anchors; fi
  ((LATENCY)) && NAME+=-latency
  ((QUICK)) && NAME+=-quick
  OUT=results/$(date +%Y-%m-%d-%H%M%S)-$NAME
fi
[[ -e $OUT ]] && die "$OUT exists already: choose another --out"
mkdir -p "$OUT/raw" "$OUT/logs"
OUT=$(cd "$OUT" && pwd)

setup_venv

# jar_outdated: SRV_JAR is missing, or a main source or pom it is built from (SRV_SOURCES and the
# root pom; tests do not count) is newer than SRV_JAR.
jar_outdated() {
  [[ -f $SRV_JAR ]] || return 0
  [[ -n $(find "${SRV_SOURCES[@]}" pom.xml -path '*/src/test' -prune -o \( -name '*.java' -o -name pom.xml \) \
    -newer "$SRV_JAR" -print -quit 2>/dev/null) ]]
}

for s in "${SELECTED[@]}"; do
  sweep_server_def "$s"
  case $SRV_KIND in
    jar)
      if ! jar_outdated; then
        :
      elif ((!BUILD)); then
        [[ -f $SRV_JAR ]] || die "$s: $SRV_JAR is missing (--no-build)"
        note "$s: $SRV_JAR is older than its sources; using it as it is (--no-build)"
      else
        need_tool mvn "building $SRV_JAR needs Maven: apt-get install -y maven"
        note "building $SRV_JAR: mvn -B -q -DskipTests -pl $SRV_MODULE -am package (log: $OUT/logs/build-$SRV_MODULE.log)"
        if ! mvn -B -q -DskipTests -pl "$SRV_MODULE" -am package >"$OUT/logs/build-$SRV_MODULE.log" 2>&1; then
          tail -n 30 "$OUT/logs/build-$SRV_MODULE.log" >&2
          die "the build of $SRV_MODULE failed (full log: $OUT/logs/build-$SRV_MODULE.log)"
        fi
        [[ -f $SRV_JAR ]] || die "the build of $SRV_MODULE succeeded but made no $SRV_JAR"
      fi
      ;;
    dummy)
      if [[ ! -f $TMP/dummy/DummyServer.class ]]; then
        need_tool javac "the dummy anchor is compiled with javac: apt-get install -y openjdk-17-jdk-headless"
        # Compiled once up front so the measured JVM does not also hold the source launcher's compiler.
        javac -d "$TMP/dummy" "$SWEEP_DIR/DummyServer.java" || die "cannot compile sweep/DummyServer.java"
      fi
      ;;
  esac
done

CLK_TCK=$(getconf CLK_TCK)

# ---------------------------------------------------------------------------------------------
# Recording: settings, one TSV line per timed step, one per after-sweep window
# ---------------------------------------------------------------------------------------------
setting() {
  printf '%s\t%s\n' "$1" "$2" >>"$OUT/settings.tsv"
}
: >"$OUT/settings.tsv"
setting date "$(date -Iseconds)"
setting mode "$( ((LATENCY)) && echo latency || echo sweep)"
setting quick "$QUICK"
setting servers "${SELECTED[*]}"
setting anchors "$ANCHORS"
setting path "$URL_PATH"
setting client "$CLIENT"
[[ $CLIENT == wrk ]] && setting wrk_threads "$WRK_THREADS"
setting rounds "$ROUNDS"
setting duration_s "$DURATION"
setting requests_per_connection_min "$SWEEP_REQUESTS_PER_CONNECTION"
setting steps_requested "$CONCURRENCY"
setting heap "$HEAP"
setting pinning "$PIN_TEXT"
setting nofile_soft_start "$NOFILE_SOFT_BEFORE"
setting nofile_soft "$NOFILE"
setting nofile_hard "$NOFILE_HARD"
setting plan_notes "${PLAN_NOTES//$'\n'/; }"
((CAPPED)) && sweep_nofile_advice >"$OUT/nofile-advice.txt"
setting clk_tck "$CLK_TCK"
setting idle_threshold_pct "$IDLE_PCT"
setting after_window_s "$AFTER_S"
setting kernel "$(uname -sr)"
setting cpu_model "$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
setting cpus "$(nproc) ($(awk '/^Cpus_allowed_list:/ {print $2}' /proc/self/status) allowed)"
setting memory "$(awk '/^MemTotal:/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
((NEEDS_JAVA)) && setting java "$JAVA_VERSION_LINE; flags ${JAVA_FLAGS[*]}"
((NEEDS_NGINX)) && setting nginx "$(nginx -v 2>&1)"
if [[ $CLIENT == ab ]]; then
  setting client_version "$(ab -V | sed -n 1p)"
else
  setting client_version "$(wrk -v 2>&1 | sed -n 1p)"
fi
setting commit "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo none)"

RUNS=$OUT/runs.tsv
printf '%s\n' "round	server	step	requested	concurrency	cap_reason	raw	warmup_raw	client_rc	requests_limit	time_limit_s	wall_s	server_cpu_ticks	client_user_ms	client_sys_ms	rss_hwm_kb	rss_kb	idle_wait_s	idle_reached	server_alive" >"$RUNS"
AFTER=$OUT/after.tsv
printf '%s\n' "round	server	window_s	cpu_pct_per_second" >"$AFTER"

# ---------------------------------------------------------------------------------------------
# Servers: start, probe, stop
# ---------------------------------------------------------------------------------------------
# http_status PORT PATH: the status code of one HTTP/1.0 GET, or nothing if it gets no answer.
http_status() {
  local fd line
  { exec {fd}<>"/dev/tcp/$BIND/$1"; } 2>/dev/null || return 0
  { printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' "$2" "$BIND" >&"$fd"; } 2>/dev/null || true
  IFS= read -r -t 10 line <&"$fd" || true
  exec {fd}>&-
  if [[ $line =~ ^HTTP/1\.[01]\ ([0-9]{3}) ]]; then
    echo "${BASH_REMATCH[1]}"
  fi
}

choose_port() {
  if [[ -n $PORT_OPT ]]; then
    # A TIME_WAIT socket on the port does not stop a listener with SO_REUSEADDR; anything else does.
    if [[ -n $(ss -Htan exclude time-wait "sport = :$PORT_OPT" | sed -n 1p) ]]; then
      ss -Htan exclude time-wait "sport = :$PORT_OPT" | sed -n 1,3p >&2
      die "port $PORT_OPT is in use (above); choose another --port or leave it out to pick a free one"
    fi
    echo "$PORT_OPT"
    return
  fi
  local range from to p i
  read -r -a range </proc/sys/net/ipv4/ip_local_port_range
  read -r from to < <(sweep_port_candidates "${range[0]}" "${range[1]}")
  for ((i = 0; i < 200; i++)); do
    p=$((from + (RANDOM * 32768 + RANDOM) % (to - from + 1)))
    sweep_port_in_use "$p" || { echo "$p"; return; }
  done
  die "found no free port in $from..$to after 200 tries"
}

write_nginx_conf() { # DIR PORT
  local user_line="" worker_connections
  # Running as root, nginx would hand the worker to "nobody": keep it the current user.
  ((EUID == 0)) && user_line="user $(id -un) $(id -gn);"
  # Well above the largest step so nginx never starts "reusing connections" (1/16 rule, FACTS.md).
  local max=0 line requested ran reason
  for line in "${PLAN[@]}"; do
    IFS=$'\t' read -r requested ran reason <<<"$line"
    ((ran > max)) && max=$ran
  done
  worker_connections=$((max + max / 4 + 1024))
  sed -e "s#@DIR@#$1#g" -e "s#@PORT@#$2#g" -e "s#@USER_LINE@#$user_line#" \
    -e "s#@NOFILE@#$NOFILE#" -e "s#@WORKER_CONNECTIONS@#$worker_connections#" \
    "$SWEEP_DIR/nginx.conf.template" >"$1/nginx.conf"
}

# start_failed ROUND NAME MESSAGE: a server that cannot be measured this round is reported (on stderr
# and in problems.tsv, which the report shows) and stopped; the sweep goes on with the next server.
start_failed() {
  [[ -f $SRV_LOG ]] && tail -n 20 "$SRV_LOG" >&2
  echo "ab-sweep: $3" >&2
  printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$OUT/problems.tsv"
  stop_server quiet
  return 1
}

# start_server NAME ROUND: sets SRV_PID (the process started), SRV_PIDS (it and its children, whose
# CPU and memory are measured), SRV_PORT, SRV_LOG. Returns 1 (see start_failed) when the server does
# not start or does not answer GET URL_PATH with a 2xx status.
start_server() {
  local name=$1 round=$2 port dir cmd=() i ready=0 status
  sweep_server_def "$name"
  SRV_NAME=$name
  SRV_LOG=$OUT/logs/r$round-$name.log
  port=$(choose_port) || { start_failed "$round" "$name" "$name: no free port"; return 1; }
  dir=$(mktemp -d "$TMP/$name.XXXXXX")
  case $SRV_KIND in
    jar) cmd=("$JAVA" "${JAVA_FLAGS[@]}" "${SRV_JVM[@]}" -jar "$SRV_JAR" --port "$port" --bind "$BIND" --data "$dir" "${SRV_ARGS[@]}") ;;
    dummy) cmd=("$JAVA" "${JAVA_FLAGS[@]}" -cp "$TMP/dummy" DummyServer --port "$port" --bind "$BIND") ;;
    nginx)
      write_nginx_conf "$dir" "$port"
      cmd=(nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" -g "daemon off;")
      ;;
  esac
  ((PIN)) && cmd=(taskset -c "$SERVER_CPU" "${cmd[@]}")
  printf '%q ' "${cmd[@]}" >>"$OUT/commands.log"
  echo >>"$OUT/commands.log"
  : >"$SRV_LOG"
  "${cmd[@]}" >"$SRV_LOG" 2>&1 </dev/null &
  SRV_PID=$!
  # Up to 120 s: a JVM front end populates its database before it prints the ready line.
  for ((i = 0; i < 1200; i++)); do
    if ! proc_alive "$SRV_PID"; then
      [[ $SRV_KIND == nginx ]] && cat "$dir/error.log" >>"$SRV_LOG" 2>/dev/null
      start_failed "$round" "$name" "$name exited before it was ready (log: $SRV_LOG)"
      return 1
    fi
    if [[ $SRV_KIND != nginx ]] && grep -q '^Exception in thread "main"' "$SRV_LOG"; then
      # Its main thread died, yet other threads may keep the JVM alive without ever serving.
      start_failed "$round" "$name" "$name failed while starting (log: $SRV_LOG)"
      return 1
    fi
    if [[ $SRV_KIND == nginx ]]; then
      [[ -n $(http_status "$port" /) ]] && ready=1
    elif grep -Eq "^kiln-[a-z-]+ listening on http://$BIND:$port/\$" "$SRV_LOG"; then
      ready=1
    fi
    ((ready)) && break
    sleep 0.1
  done
  if ((!ready)); then
    start_failed "$round" "$name" "$name did not become ready within 120 s (log: $SRV_LOG)"
    return 1
  fi
  status=$(http_status "$port" "$URL_PATH")
  if [[ $status != 2?? ]]; then
    start_failed "$round" "$name" "$name answered GET $URL_PATH with '${status:-nothing}', not 2xx: not measured (every response would count as a failure)"
    return 1
  fi
  SRV_PORT=$port
  SRV_PIDS=("$SRV_PID")
  local child
  for child in $(pgrep -P "$SRV_PID" || true); do SRV_PIDS+=("$child"); done
}

# wait_idle: until the server's CPU is under IDLE_PCT % for 0.5 s, at most IDLE_MAX_S; sets
# IDLE_WAIT_S (seconds waited, 0.5 s resolution) and IDLE_REACHED (1/0).
wait_idle() {
  local i t0 t1
  IDLE_REACHED=0
  for ((i = 0; i < 2 * IDLE_MAX_S; i++)); do
    t0=$(sweep_cpu_ticks "${SRV_PIDS[@]}")
    sleep 0.5
    t1=$(sweep_cpu_ticks "${SRV_PIDS[@]}")
    # (t1-t0)/CLK_TCK s of CPU in 0.5 s, below IDLE_PCT % of one core
    if (((t1 - t0) * 200 < IDLE_PCT * CLK_TCK)); then
      IDLE_REACHED=1
      break
    fi
  done
  IDLE_WAIT_S=$(awk -v i="$i" 'BEGIN {printf "%.1f", i / 2}')
}

# ---------------------------------------------------------------------------------------------
# The load client
# ---------------------------------------------------------------------------------------------
# run_client CONCURRENCY REQUESTS TIME_LIMIT_S OUTFILE [CSVFILE]: ab serves REQUESTS or stops at
# TIME_LIMIT_S, whichever comes first (wrk has no count: it runs TIME_LIMIT_S); CSVFILE receives ab's
# percentile table with microsecond resolution. On CLIENT_CPU when pinned; sets CLIENT_RC. `timeout`
# bounds the client even if it ignores its own limit.
run_client() {
  local c=$1 n=$2 t=$3 out=$4 csv=${5:-} cmd=()
  ((PIN)) && cmd=(taskset -c "$CLIENT_CPU")
  if [[ $CLIENT == ab ]]; then
    # -t before -n: ab's -t resets the request count, -n then sets ours. -r: count receive errors
    # instead of aborting; -l: do not count length changes as failures (/db varies, FACTS.md).
    cmd+=(ab -q -k -r -l -s 30 -t "$t" -n "$n" -c "$c")
    [[ -n $csv ]] && cmd+=(-e "$csv")
  else
    cmd+=(wrk -t "$WRK_THREADS" -c "$c" -d "${t}s" --timeout 30s -s "$SWEEP_DIR/wrk-report.lua")
  fi
  cmd+=("http://$BIND:$SRV_PORT$URL_PATH")
  printf '%q ' "${cmd[@]}" >>"$OUT/commands.log"
  echo >>"$OUT/commands.log"
  CLIENT_RC=0
  timeout -k 5 $((t + 60)) "${cmd[@]}" >"$out" 2>"$out.err" </dev/null &
  CLIENT_PID=$!
  wait "$CLIENT_PID" || CLIENT_RC=$?
  CLIENT_PID=""
  [[ -s $out.err ]] || rm -f "$out.err"
}

# step_figures FILE: "COMPLETE RPS FAILURES P50_MS P99_MS" as the report reads them ("-" if none).
step_figures() {
  "$REPORT_PY" "$SWEEP_DIR/report.py" step --client "$CLIENT" "$1"
}

# ---------------------------------------------------------------------------------------------
# One step, one server's sweep
# ---------------------------------------------------------------------------------------------
run_step() { # ROUND SERVER STEP REQUESTED RAN REASON
  local round=$1 name=$2 step=$3 requested=$4 c=$5 reason=$6
  local base=$OUT/raw/r$round-$name-c$c rel="raw/r$round-$name-c$c"
  local warm_rps n tl ticks0 ticks1 start end wall user_ms sys_ms hwm rss alive=1 figures
  local label
  label=$(sweep_step_label "$requested" "$c" "$reason")

  wait_idle
  # The warm-up runs for DURATION s: its request count only has to exceed what ab can send in that
  # time (~100k req/s on one core), since ab allocates its statistics for the whole count up front.
  run_client "$c" $((c * SWEEP_REQUESTS_PER_CONNECTION > 150000 * DURATION ? c * SWEEP_REQUESTS_PER_CONNECTION : 150000 * DURATION)) "$DURATION" "$base-warmup.txt"
  read -r _ warm_rps _ < <(step_figures "$base-warmup.txt")
  IFS=$'\t' read -r n tl < <(sweep_timed_load "$c" "$warm_rps" "$DURATION")
  [[ $CLIENT == wrk ]] && tl=$(sweep_wrk_duration "$n" "$warm_rps" "$DURATION")
  wait_idle

  ticks0=$(sweep_cpu_ticks "${SRV_PIDS[@]}")
  start=$EPOCHREALTIME
  times >"$TMP/times0"
  run_client "$c" "$n" "$tl" "$base.txt" "$base.csv"
  times >"$TMP/times1"
  end=$EPOCHREALTIME
  ticks1=$(sweep_cpu_ticks "${SRV_PIDS[@]}")
  hwm=$(sweep_status_kb VmHWM "${SRV_PIDS[@]}")
  rss=$(sweep_status_kb VmRSS "${SRV_PIDS[@]}")
  proc_alive "$SRV_PID" || alive=0

  local u0 s0 u1 s1
  read -r u0 s0 < <(sweep_times_children_ms "$TMP/times0")
  read -r u1 s1 < <(sweep_times_children_ms "$TMP/times1")
  user_ms=$((u1 - u0)) sys_ms=$((s1 - s0))
  wall=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.3f", b - a}')
  printf '%s\n' "$round	$name	$step	$requested	$c	$reason	$rel.txt	$rel-warmup.txt	$CLIENT_RC	$n	$tl	$wall	$((ticks1 - ticks0))	$user_ms	$sys_ms	$hwm	$rss	$IDLE_WAIT_S	$IDLE_REACHED	$alive" >>"$RUNS"

  read -r -a figures < <(step_figures "$base.txt")
  awk -v r="$round" -v R="$ROUNDS" -v s="$name" -v l="$label" -v rps="${figures[1]}" -v f="${figures[2]}" \
    -v p99="${figures[4]}" -v done="${figures[0]}" -v ticks=$((ticks1 - ticks0)) -v hz="$CLK_TCK" \
    -v hwm="$hwm" -v cu="$((user_ms + sys_ms))" -v wall="$wall" -v rc="$CLIENT_RC" -v idle="$IDLE_REACHED" 'BEGIN {
      us = (done + 0 > 0) ? sprintf("%.1f", ticks / hz * 1e6 / done) : "-"
      printf "[round %d/%d] %-17s c=%-7s %9s req/s  failed %s  p99 %s ms  %s us/req CPU  RSS %.0f MB  %s CPU %.0f%%%s%s\n",
        r, R, s, l, rps, f, p99, us, hwm / 1024, "client", cu / 10 / wall, (rc != 0 ? "  (client exit " rc ")" : ""),
        (idle ? "" : "  (server not idle before the step)")
    }'
  if ((!alive)); then
    note "$name died during c=$label (log: $SRV_LOG)"
    printf '%s\t%s\t%s\n' "$round" "$name" "$name died during c=$label (log: $SRV_LOG)" >>"$OUT/problems.tsv"
    return 1
  fi
}

after_sweep() { # ROUND SERVER: CPU per second for AFTER_S seconds after the last step
  local i t0 t1 pcts=()
  for ((i = 0; i < AFTER_S; i++)); do
    t0=$(sweep_cpu_ticks "${SRV_PIDS[@]}")
    sleep 1
    t1=$(sweep_cpu_ticks "${SRV_PIDS[@]}")
    pcts+=("$(((t1 - t0) * 100 / CLK_TCK))")
  done
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$AFTER_S" "$(IFS=,; echo "${pcts[*]}")" >>"$AFTER"
  echo "[round $1/$ROUNDS] $2: CPU in the $AFTER_S s after the sweep (% per second): ${pcts[*]}"
}

sweep_server() { # ROUND SERVER
  local round=$1 name=$2 line requested ran reason step=0
  start_server "$name" "$round" || return 0
  echo "[round $round/$ROUNDS] $name listening on $BIND:$SRV_PORT (pid ${SRV_PIDS[*]})"
  for line in "${PLAN[@]}"; do
    IFS=$'\t' read -r requested ran reason <<<"$line"
    step=$((step + 1))
    run_step "$round" "$name" "$step" "$requested" "$ran" "$reason" || break
  done
  if proc_alive "$SRV_PID"; then
    after_sweep "$round" "$name"
  fi
  stop_server
  # 143: a JVM without its own SIGTERM handling ends with the signal's status; still a clean stop.
  ((SRV_EXIT == 0 || SRV_EXIT == 143)) || note "$name exited with status $SRV_EXIT after SIGTERM (log: $SRV_LOG)"
}

# ---------------------------------------------------------------------------------------------
# Rounds: every round visits every server, starting one further along each time, so that no server
# always runs first (or right after the same neighbour) while the host's speed drifts.
# ---------------------------------------------------------------------------------------------
note "results in $OUT"
count=${#SELECTED[@]}
for ((round = 1; round <= ROUNDS; round++)); do
  for ((k = 0; k < count; k++)); do
    name=${SELECTED[$(((k + round - 1) % count))]}
    sweep_server "$round" "$name"
    sleep "$COOLDOWN_S"
  done
done

if (($(wc -l <"$RUNS") == 1)); then
  die "no step was measured (see the messages above)"
fi
run_report "$OUT"
REPORTED=1
if [[ -s $OUT/problems.tsv ]]; then
  echo "ab-sweep: some servers could not be measured in every round (see the notes above)" >&2
  exit 1
fi
