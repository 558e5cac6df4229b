# shellcheck shell=bash
# Functions for ab-sweep.sh that do no I/O on servers: file-limit capping, the step plan, request
# counts, port choice and /proc readings. Sourced by ab-sweep.sh and by sweep/test.sh, which calls
# them with fake limits.

# Descriptors a process needs beyond one per connection: a JVM holds its jars, LMDB's files, epoll and
# selector pipes (measured ~C+10..30), ab ~C+4. 500 leaves room for both with margin, so a limit of
# 20000 allows 19500 connections (19000 and 19990 were measured to work here, 20000 was not).
SWEEP_FD_SPARE=500
# ApacheBench refuses -c above this (MAX_CONCURRENCY in ab.c).
SWEEP_AB_MAX_CONCURRENCY=20000
# A timed step serves at least this many requests per connection, so that connection setup does not
# dominate at high concurrency (FACTS.md: N >= 20-30 x C).
SWEEP_REQUESTS_PER_CONNECTION=25

# sweep_cap NOFILE REQUESTED CLIENT
#   The concurrency a step can really run at. NOFILE is the open-files limit the server and the
#   client will each have ("unlimited" allowed), CLIENT is ab or wrk.
#   Prints "RAN<TAB>REASON": REASON is empty when RAN == REQUESTED, else says what capped it, e.g.
#   "19500<TAB>open-files limit 20000". RAN is 0 when the limit leaves no room at all.
sweep_cap() {
  local nofile=$1 requested=$2 client=$3
  local ran=$requested reason=""
  if [[ $client == ab ]] && ((ran > SWEEP_AB_MAX_CONCURRENCY)); then
    ran=$SWEEP_AB_MAX_CONCURRENCY
    reason="ab's maximum concurrency $SWEEP_AB_MAX_CONCURRENCY"
  fi
  if [[ $nofile != unlimited ]]; then
    local room=$((nofile - SWEEP_FD_SPARE))
    ((room < 0)) && room=0
    if ((ran > room)); then
      ran=$room
      reason="open-files limit $nofile"
    fi
  fi
  printf '%s\t%s\n' "$ran" "$reason"
}

# sweep_plan NOFILE CLIENT REQUESTED...
#   One line per step to run: "REQUESTED<TAB>RAN<TAB>REASON". A step whose capped concurrency is 0 or
#   equal to an earlier step's is dropped (running it again would only repeat that step); it is
#   reported on stderr instead.
sweep_plan() {
  local nofile=$1 client=$2 requested ran reason
  shift 2
  local -A seen=()
  for requested in "$@"; do
    IFS=$'\t' read -r ran reason < <(sweep_cap "$nofile" "$requested" "$client")
    if ((ran == 0)); then
      echo "skipping concurrency $requested: the ${reason} leaves no descriptors for connections" >&2
    elif [[ -n ${seen[$ran]:-} ]]; then
      echo "skipping concurrency $requested: capped to $ran (${reason}), which an earlier step already runs" >&2
    else
      seen[$ran]=1
      printf '%s\t%s\t%s\n' "$requested" "$ran" "$reason"
    fi
  done
}

# sweep_step_label REQUESTED RAN REASON
#   How a step is named everywhere: a capped step is never labelled with the requested number.
sweep_step_label() {
  if [[ -n $3 ]]; then
    echo "requested $1, ran $2: $3"
  else
    echo "$2"
  fi
}

# sweep_nofile_advice
#   How to raise the open-files limit on a VPS, printed whenever a step was capped by it.
sweep_nofile_advice() {
  cat <<'EOF'
To run every step on a VPS, raise the open-files limit before starting the sweep:
  - this shell:   ulimit -n 102400   (works up to the hard limit; as root it can raise that too)
  - every login:  add "* soft nofile 102400" and "* hard nofile 102400" to /etc/security/limits.conf
                  (or a file in /etc/security/limits.d/), then log in again
  - a systemd service or `systemd-run`: LimitNOFILE=102400
ApacheBench itself stops at 20000 connections; use --client wrk to go higher.
EOF
}

# sweep_timed_load CONCURRENCY WARMUP_REQ_PER_S DURATION_S
#   Size of a timed step: prints "REQUESTS<TAB>TIME_LIMIT_S". The step runs for about DURATION_S at
#   the rate the warm-up saw, but serves at least SWEEP_REQUESTS_PER_CONNECTION requests per
#   connection; the time limit (3 x DURATION_S) bounds it when the server is slower than that.
sweep_timed_load() {
  local c=$1 rate=${2%.*} d=$3
  [[ $rate =~ ^[0-9]+$ ]] || rate=0
  local n=$((c * SWEEP_REQUESTS_PER_CONNECTION))
  ((rate * d > n)) && n=$((rate * d))
  printf '%s\t%s\n' "$n" "$((3 * d))"
}

# sweep_wrk_duration REQUESTS WARMUP_REQ_PER_S DURATION_S
#   wrk has no request count: the duration (s) that serves REQUESTS at the warm-up's rate, between
#   DURATION_S and 3 x DURATION_S.
sweep_wrk_duration() {
  local n=$1 rate=${2%.*} d=$3 t
  [[ $rate =~ ^[0-9]+$ ]] && ((rate > 0)) || rate=1
  t=$(((n + rate - 1) / rate))
  ((t < d)) && t=$d
  ((t > 3 * d)) && t=$((3 * d))
  echo "$t"
}

# sweep_times_children_ms FILE
#   FILE holds the output of bash's `times`; prints the children's "USER_MS SYS_MS".
sweep_times_children_ms() {
  local line re='^([0-9]+)m([0-9]+)\.([0-9]{3})s ([0-9]+)m([0-9]+)\.([0-9]{3})s$'
  line=$(sed -n 2p "$1")
  if [[ $line =~ $re ]]; then
    local r=("${BASH_REMATCH[@]}")
    echo "$((10#${r[1]} * 60000 + 10#${r[2]} * 1000 + 10#${r[3]})) $((10#${r[4]} * 60000 + 10#${r[5]} * 1000 + 10#${r[6]}))"
  else
    echo "0 0"
  fi
}

# sweep_cpu_ticks PID...
#   Sum of utime+stime (clock ticks, see `getconf CLK_TCK`) over the processes, all threads included
#   (proc(5): /proc/PID/stat fields 14 and 15). A process that is gone counts 0.
sweep_cpu_ticks() {
  local pid stat total=0 fields
  for pid in "$@"; do
    { IFS= read -r stat <"/proc/$pid/stat"; } 2>/dev/null || continue
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    read -r -a fields <<<"${stat##*) }"
    # fields[0] is field 3 (state), so utime (14) and stime (15) are fields[11] and fields[12].
    total=$((total + fields[11] + fields[12]))
  done
  echo "$total"
}

# sweep_status_kb FIELD PID...
#   Sum of a /proc/PID/status field in kB over the processes, e.g. VmHWM (peak resident set).
sweep_status_kb() {
  local field=$1 pid key value total=0
  shift
  for pid in "$@"; do
    [[ -r /proc/$pid/status ]] || continue
    while read -r key value _; do
      if [[ $key == "$field:" ]]; then
        total=$((total + value))
        break
      fi
    done <"/proc/$pid/status"
  done
  echo "$total"
}

# sweep_expand_cpus LIST
#   Expands a kernel CPU list ("0-3,6") into one CPU number per line.
sweep_expand_cpus() {
  local part a b
  local IFS=,
  for part in $1; do
    if [[ $part == *-* ]]; then
      a=${part%-*} b=${part#*-}
      seq "$a" "$b"
    else
      echo "$part"
    fi
  done
}

# sweep_port_candidates LOW HIGH
#   Where to look for a free server port, given the kernel's ephemeral range [LOW, HIGH]: outside it
#   when there is room, because ab's tens of thousands of client sockets take ports inside it.
#   Prints "FROM TO".
sweep_port_candidates() {
  local low=$1 high=$2
  if ((low - 1 - 10000 >= 1000)); then
    echo "10000 $((low - 1))"
  elif ((65535 - high - 1 >= 1000)); then
    echo "$((high + 1)) 65535"
  else
    echo "1024 65535"
  fi
}

# sweep_port_in_use PORT
#   True when any TCP socket on this machine uses PORT locally (listening, connected or TIME_WAIT).
sweep_port_in_use() {
  [[ -n $(ss -Htan "sport = :$1" 2>/dev/null | sed -n 1p) ]]
}
