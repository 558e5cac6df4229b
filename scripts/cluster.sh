#!/usr/bin/env bash
# kiln beyond one box, on one machine: a PostgreSQL primary and a hot standby (streaming replication,
# synchronous_commit = remote_apply), two kiln servers over the primary, and nginx in front of both
# (deploy/nginx/kiln-cluster.conf). What `make cluster` and `make cluster-stop` run (docs/scaling.md).
#
#   scripts/cluster.sh start DIR   # start it all in DIR (made on first use); prints the URL
#   scripts/cluster.sh stop DIR    # stop it all (the data stays in DIR; start again resumes)
#   scripts/cluster.sh status DIR  # what runs
#   scripts/cluster.sh nginx DIR   # only nginx, in front of KILN_PORTS (./ab-sweep.sh --postgres); its pid in
#                                  # DIR/nginx/nginx.pid
#
# Environment: JAR (a front end's jar, e.g. http-kilim/target/kiln-kilim.jar, or an app's own whose main
# takes kiln's flags), JAVA and JAVA_FLAGS (how to run it), PORT (nginx, default 8080), KILN_PORTS
# (default "8081 8082"), PG_PORTS (primary and standby, default "25432 25433": every default port is
# below Linux's ephemeral range, 32768-60999, so a load test's client ports never take one). The servers reach PostgreSQL through a URL naming both databases
# with targetServerType=primary: after `scripts/postgres.sh promote DIR/postgres-standby` they
# reconnect to the promoted standby on their own, and `start` then never starts the old primary again
# (it would take writes beside the new one): rebuild it as a standby first (docs/scaling.md, 3c).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

[ $# -eq 2 ] || usage
cmd="$1"
dir="$(mkdir -p "$2" && cd "$2" && pwd)"
PORT="${PORT:-8080}"
read -r -a kiln_ports <<<"${KILN_PORTS:-8081 8082}"
read -r -a pg_ports <<<"${PG_PORTS:-25432 25433}"
names=(a b)
primary="$dir/postgres-primary"
standby="$dir/postgres-standby"
url="postgresql://kiln@127.0.0.1:${pg_ports[0]},127.0.0.1:${pg_ports[1]}/kiln?targetServerType=primary"

say() { echo "cluster: $*"; }

running() {  # PIDFILE
  [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

wait_for_line() {  # FILE TEXT SECONDS PID
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    if grep -q "$2" "$1" 2>/dev/null; then return 0; fi
    if ! kill -0 "$4" 2>/dev/null; then break; fi
    sleep 0.1
  done
  echo "cluster: '$2' did not appear in $1:" >&2
  tail -20 "$1" >&2
  return 1
}

start_postgres() {
  local d
  if [ "$(id -u)" -eq 0 ] && ! runuser -u postgres -- test -x "$dir"; then
    echo "cluster: as root, PostgreSQL runs as the postgres user, which cannot enter $dir; choose a directory it can (CLUSTER_DIR=/tmp/kiln-cluster)" >&2
    exit 1
  fi
  if [ -e "$dir/initialising" ]; then
    # an initialisation that was killed half-way: nothing was served from what it made
    say "the initialisation in $dir did not finish: starting it afresh"
    remove_postgres
  fi
  if [ ! -e "$primary/PG_VERSION" ] && [ ! -e "$standby/PG_VERSION" ]; then
    if ! initialise; then
      echo "cluster: initialising PostgreSQL failed; removing the half-made cluster so the next run starts afresh" >&2
      for d in "$primary" "$standby"; do
        if [ -s "$d/server.log" ]; then echo "cluster: the end of $d/server.log:" >&2; tail -5 "$d/server.log" >&2; fi
      done
      remove_postgres
      exit 1
    fi
  elif [ ! -e "$primary/PG_VERSION" ] || [ ! -e "$standby/PG_VERSION" ]; then
    echo "cluster: only one of $primary and $standby holds a server; rebuild the other as a standby of it" \
      "(docs/scaling.md, 3c), or remove $dir to start afresh" >&2
    exit 1
  else
    for d in "$primary" "$standby"; do
      if [ -e "$d/postmaster.pid" ]; then continue; fi
      if [ "$d" = "$primary" ] && [ ! -e "$standby/standby.signal" ]; then
        echo "cluster: $standby was promoted: not starting the old primary in $primary, which would take writes beside" \
          "the new one; rebuild it as a standby of the new primary (docs/scaling.md, 3c)" >&2
        continue
      fi
      scripts/postgres.sh start "$d"
    done
  fi
}

# Makes the primary and its hot standby (DIR/initialising marks the work in progress); returns non-zero
# at the first step that fails (its output says why).
initialise() {
  touch "$dir/initialising"
  say "initialising the PostgreSQL primary in $primary (port ${pg_ports[0]})"
  scripts/postgres.sh init "$primary" "${pg_ports[0]}" || return 1
  say "making the hot standby in $standby (port ${pg_ports[1]}) with pg_basebackup"
  scripts/postgres.sh standby "$standby" "${pg_ports[1]}" "${pg_ports[0]}" || return 1
  # every commit waits until the standby has applied it: a promoted standby has every acknowledged write
  psql_primary -c "ALTER SYSTEM SET synchronous_standby_names = '*'" \
    -c "ALTER SYSTEM SET synchronous_commit = 'remote_apply'" -c "SELECT pg_reload_conf()" || return 1
  rm -f "$dir/initialising"
}

# Stops whatever runs in the two PostgreSQL directories and removes them: only what a failed or killed
# initialisation made (DIR/initialising), from which nothing was served.
remove_postgres() {
  local d
  for d in "$standby" "$primary"; do
    if [ -e "$d/postmaster.pid" ]; then scripts/postgres.sh stop "$d" immediate || true; fi
  done
  rm -rf "$standby" "$primary" "$standby.initdb.log" "$primary.initdb.log" "$dir/initialising"
}

psql_primary() {
  "$(scripts/postgres.sh bindir)/psql" -X -q -h 127.0.0.1 -p "${pg_ports[0]}" -U kiln -d kiln "$@" >/dev/null
}

start_kiln() {  # INDEX
  local name="${names[$1]}" port="${kiln_ports[$1]}"
  local pidfile="$dir/kiln-$name.pid" log="$dir/kiln-$name.log"
  if running "$pidfile"; then return; fi
  : "${JAR:?give JAR, the jar of a front end (make cluster does)}"
  # shellcheck disable=SC2086  # JAVA_FLAGS is a list of flags
  nohup ${JAVA:-java} ${JAVA_FLAGS:-} -jar "$JAR" --port "$port" --bind 127.0.0.1 --db "$url" >"$log" 2>&1 &
  echo $! >"$pidfile"
  wait_for_line "$log" "listening on" 90 "$(cat "$pidfile")"
  say "kiln $name on http://127.0.0.1:$port/ (log $log)"
}

start_nginx() {
  local conf="$dir/nginx"
  mkdir -p "$conf/sites" "$conf/snippets" "$conf/logs" "$conf/tmp" "$conf/acme"
  if [ -s "$conf/nginx.pid" ] && kill -0 "$(cat "$conf/nginx.pid")" 2>/dev/null; then return; fi
  sed -e "s|server 127.0.0.1:8081 |server 127.0.0.1:${kiln_ports[0]} |" -e "s|server 127.0.0.1:8082 |server 127.0.0.1:${kiln_ports[1]} |" \
      -e "s|listen 80;|listen 127.0.0.1:$PORT;|" -e "/listen \[::\]:80;/d" -e "s|root /var/www/letsencrypt;|root $conf/acme;|" \
      deploy/nginx/kiln-cluster.conf >"$conf/sites/kiln-cluster.conf"
  cp deploy/nginx/kiln-proxy.conf "$conf/snippets/kiln-proxy.conf"
  # Debian's nginx.conf in miniature: one worker, everything under DIR/nginx
  {
    if [ "$(id -u)" -eq 0 ]; then echo "user root;"; fi
    echo "worker_processes 1;"
    echo "pid $conf/nginx.pid;"
    echo "error_log $conf/logs/error.log;"
    echo "events { worker_connections 4096; }"
    echo "http {"
    echo "  default_type application/octet-stream;"
    echo "  access_log $conf/logs/access.log;"
    for t in client_body proxy fastcgi uwsgi scgi; do echo "  ${t}_temp_path $conf/tmp/$t;"; done
    echo "  include sites/kiln-cluster.conf;"
    echo "}"
  } >"$conf/nginx.conf"
  /usr/sbin/nginx -p "$conf/" -c "$conf/nginx.conf"
  say "nginx on http://127.0.0.1:$PORT/ (deploy/nginx/kiln-cluster.conf; logs in $conf/logs)"
}

stop_pid() {  # PIDFILE WHAT
  if running "$1"; then
    local pid
    pid="$(cat "$1")"
    kill "$pid"
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid"; fi
    say "stopped $2"
  fi
  rm -f "$1"
}

case "$cmd" in
  start)
    command -v /usr/sbin/nginx >/dev/null || { echo "cluster: nginx is not installed: apt-get install nginx-light" >&2; exit 1; }
    start_postgres
    start_kiln 0  # one at a time: the first fills the demo tables
    start_kiln 1
    start_nginx
    say "up: http://127.0.0.1:$PORT/ (kiln ${names[0]} and ${names[1]} behind nginx, PostgreSQL primary ${pg_ports[0]}, standby ${pg_ports[1]})"
    say "try: curl -N http://127.0.0.1:${kiln_ports[1]}/updates/events & curl 'http://127.0.0.1:${kiln_ports[0]}/updates?queries=2'"
    ;;
  nginx)
    start_nginx
    ;;
  stop)
    if [ -s "$dir/nginx/nginx.pid" ]; then stop_pid "$dir/nginx/nginx.pid" nginx; fi
    for i in 0 1; do stop_pid "$dir/kiln-${names[$i]}.pid" "kiln ${names[$i]}"; done
    for d in "$standby" "$primary"; do
      if [ -e "$d/postmaster.pid" ]; then scripts/postgres.sh stop "$d" && say "stopped PostgreSQL in $d"; fi
    done
    ;;
  status)
    for i in 0 1; do
      if running "$dir/kiln-${names[$i]}.pid"; then say "kiln ${names[$i]}: running on ${kiln_ports[$i]}"; else say "kiln ${names[$i]}: stopped"; fi
    done
    if running "$dir/nginx/nginx.pid"; then say "nginx: running on $PORT"; else say "nginx: stopped"; fi
    for d in "$primary" "$standby"; do
      if [ -e "$d/postmaster.pid" ]; then say "PostgreSQL in $d: running"; else say "PostgreSQL in $d: stopped"; fi
    done
    ;;
  *)
    usage
    ;;
esac
