#!/usr/bin/env bash
# kiln beyond one box, on one machine: two PostgreSQL servers run by Patroni (one primary, one
# synchronous standby; failover on its own when the primary dies or hangs), etcd holding Patroni's
# leader lease, HAProxy sending kiln's connections to whichever server holds it, two kiln servers,
# and nginx in front of both (deploy/nginx/kiln-cluster.conf). What `make cluster` and
# `make cluster-stop` run (docs/scaling.md, section 3).
#
#   scripts/cluster.sh start DIR   # start it all in DIR (made on first use); prints the URL
#   scripts/cluster.sh stop DIR    # stop it all (the data stays in DIR; start again resumes)
#   scripts/cluster.sh status DIR  # what runs, and which PostgreSQL server is the primary
#   scripts/cluster.sh nginx DIR   # only nginx, in front of KILN_PORTS (./ab-sweep.sh --postgres); its pid in
#                                  # DIR/nginx/nginx.pid
#
# Environment: JAR (a front end's jar, e.g. http-kilim/target/kiln-kilim.jar, or an app's own whose main
# takes kiln's flags), JAVA and JAVA_FLAGS (how to run it), PORT (nginx, default 8080), KILN_PORTS
# (default "8081 8082"), PG_PORTS (the two PostgreSQL servers, default "25432 25433"), PATRONI_PORTS
# (their Patroni REST APIs, "28008 28009"), ETCD_PORTS (client and peer, "22379 22380"), HAPROXY_PORT
# (the primary's address for kiln, 25400). Every default port is below Linux's ephemeral range
# (32768-60999), so a load test's client ports never take one. Needs: apt-get install patroni etcd-server
# haproxy nginx-light postgresql.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

[ $# -eq 2 ] || usage
cmd="$1"
dir="$(mkdir -p "$2" && cd "$2" && pwd)"
PORT="${PORT:-8080}"
read -r -a kiln_ports <<<"${KILN_PORTS:-8081 8082}"
read -r -a pg_ports <<<"${PG_PORTS:-25432 25433}"
read -r -a rest_ports <<<"${PATRONI_PORTS:-28008 28009}"
read -r -a etcd_ports <<<"${ETCD_PORTS:-22379 22380}"
haproxy_port="${HAPROXY_PORT:-25400}"
haproxy="$(command -v haproxy || echo /usr/sbin/haproxy)"  # /usr/sbin is not on every user's PATH
names=(a b)
members=(pg1 pg2)

say() { echo "cluster: $*"; }

running() {  # PIDFILE: its process lives (a zombie, dead but not yet reaped, does not count)
  local pid
  [ -s "$1" ] || return 1
  pid="$(cat "$1")"
  kill -0 "$pid" 2>/dev/null && [ "$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$pid/status" 2>/dev/null)" != Z ]
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

# 0 when the Patroni REST API on PORT answers PATH with 200 (e.g. /primary: this member holds the lease)
patroni_says() {  # PORT PATH
  python3 - "http://127.0.0.1:$1$2" <<'EOF' 2>/dev/null
import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=2)
EOF
}

# Waits until a member answers PATH with 200; on failure prints the end of its logs and returns 1
wait_for_member() {  # INDEX PATH SECONDS WHAT
  local i
  for ((i = 0; i < $3 * 2; i++)); do
    if patroni_says "${rest_ports[$1]}" "$2"; then return 0; fi
    if ! running "$dir/patroni/${members[$1]}.pid"; then echo "cluster: Patroni ${members[$1]} exited" >&2; break; fi
    sleep 0.5
  done
  echo "cluster: ${members[$1]} did not become $4 within $3 s; the end of $dir/patroni/${members[$1]}.log:" >&2
  tail -15 "$dir/patroni/${members[$1]}.log" >&2
  return 1
}

# The directories must be open to the postgres user when running as root (Patroni runs PostgreSQL as
# it: initdb refuses root). setpriv execs the command as that user, with no process of its own in
# between (runuser stays as its parent), so a pid file and a signal reach the command itself.
as_postgres() {
  if [ "$(id -u)" -eq 0 ]; then
    (cd / && exec setpriv --reuid=postgres --regid=postgres --init-groups -- "$@")
  else
    "$@"
  fi
}

start_etcd() {
  local pidfile="$dir/etcd.pid" i
  if running "$pidfile"; then return; fi
  nohup etcd --name kiln --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:${etcd_ports[0]}" --advertise-client-urls "http://127.0.0.1:${etcd_ports[0]}" \
    --listen-peer-urls "http://127.0.0.1:${etcd_ports[1]}" --initial-advertise-peer-urls "http://127.0.0.1:${etcd_ports[1]}" \
    --initial-cluster "kiln=http://127.0.0.1:${etcd_ports[1]}" --enable-v2=true >>"$dir/etcd.log" 2>&1 &
  echo $! >"$pidfile"
  for ((i = 0; i < 100; i++)); do
    if python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:${etcd_ports[0]}/health', timeout=1)" 2>/dev/null; then
      say "etcd on 127.0.0.1:${etcd_ports[0]} (Patroni's leader lease; log $dir/etcd.log)"
      return
    fi
    if ! running "$pidfile"; then break; fi
    sleep 0.1
  done
  echo "cluster: etcd did not start; the end of $dir/etcd.log:" >&2
  tail -10 "$dir/etcd.log" >&2
  exit 1
}

# A member's Patroni configuration. The lease (ttl) is 10 s, renewed every loop_wait 2 s: a primary
# that cannot renew it for 10 s (dead, hung, cut off) is replaced, and demotes itself the moment it
# sees the lease gone. synchronous_mode: every commit waits for the standby Patroni names, and only
# that standby may be promoted (no acknowledged write is lost in a failover); failsafe_mode: a primary
# that loses etcd but still reaches every member keeps its role (etcd's death stops no write).
# Patroni reaches etcd through its v2 API (etcd --enable-v2): Debian's Patroni 3.0.2 caches etcd3 keys,
# and after a failover that cache can go stale for good ("Synchronous replication key updated by
# someone else" every loop, the standby never made synchronous again: patroni/patroni#2779, fixed in
# 3.1 by #2783; seen here once in four runs of ClusterTest).
write_patroni_config() {  # INDEX
  local m="${members[$1]}"
  as_postgres tee "$dir/patroni/$m.yml" >/dev/null <<EOF
# kiln (scripts/cluster.sh): member $m of the cluster 'kiln'
scope: kiln
name: $m
log:
  level: INFO
restapi:
  listen: 127.0.0.1:${rest_ports[$1]}
  connect_address: 127.0.0.1:${rest_ports[$1]}
etcd:
  hosts: 127.0.0.1:${etcd_ports[0]}
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 2
    retry_timeout: 4
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    failsafe_mode: true
    postgresql:
      use_pg_rewind: true
      parameters:
        synchronous_commit: remote_apply
        max_connections: 200
        hot_standby_feedback: "on"
        wal_log_hints: "on"
        wal_sender_timeout: 5s
  initdb:
    - encoding: UTF8
    - locale: C
    - auth: trust
  post_bootstrap: $dir/patroni/post-bootstrap.sh
postgresql:
  listen: 127.0.0.1:${pg_ports[$1]}
  connect_address: 127.0.0.1:${pg_ports[$1]}
  data_dir: $dir/$m
  bin_dir: $(scripts/postgres.sh bindir)
  pgpass: $dir/patroni/$m.pgpass
  authentication:
    superuser:
      username: kiln
    replication:
      username: replicator
    rewind:
      username: kiln
  pg_hba:
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
  parameters:
    unix_socket_directories: ''
  basebackup:
    - checkpoint: fast
EOF
}

start_member() {  # INDEX
  local m="${members[$1]}"
  local pidfile="$dir/patroni/$m.pid"
  if running "$pidfile"; then return; fi
  write_patroni_config "$1"
  # sh records its own pid, then becomes Patroni: the pid file names Patroni itself
  # shellcheck disable=SC2016  # $$ and $0 belong to that sh
  as_postgres sh -c 'echo $$ >"$0"; exec patroni "$1" >>"$2" 2>&1' "$pidfile" "$dir/patroni/$m.yml" "$dir/patroni/$m.log" \
    </dev/null >/dev/null 2>&1 &  # Patroni must not hold the caller's output open
  for _ in $(seq 50); do [ -s "$pidfile" ] && break; sleep 0.1; done
}

start_postgres() {
  local i primary
  if [ "$(id -u)" -eq 0 ] && ! runuser -u postgres -- test -x "$dir"; then
    echo "cluster: as root, PostgreSQL runs as the postgres user, which cannot enter $dir; choose a directory it can (CLUSTER_DIR=/tmp/kiln-cluster)" >&2
    exit 1
  fi
  if [ -e "$dir/postgres-primary/PG_VERSION" ] || [ -e "$dir/postgres-standby/PG_VERSION" ]; then
    echo "cluster: $dir holds a cluster of the make cluster before Patroni (postgres-primary, postgres-standby):" \
      "its data is not taken over; dump what you need (pg_dump), then remove $dir, or use another CLUSTER_DIR" >&2
    exit 1
  fi
  if [ -e "$dir/initialising" ]; then
    # an initialisation that failed or was killed half-way: nothing was served from what it made
    say "the initialisation in $dir did not finish: starting it afresh"
    stop_all
    rm -rf "$dir/etcd" "$dir/patroni" "$dir/pg1" "$dir/pg2"
  fi
  mkdir -p "$dir/patroni" "$dir/${members[0]}" "$dir/${members[1]}"
  chmod 700 "$dir/${members[0]}" "$dir/${members[1]}"  # PostgreSQL refuses a data directory others may read
  if [ "$(id -u)" -eq 0 ]; then chown postgres: "$dir/patroni" "$dir/${members[0]}" "$dir/${members[1]}"; fi
  start_etcd
  if [ ! -e "$dir/${members[0]}/PG_VERSION" ] && [ ! -e "$dir/${members[1]}/PG_VERSION" ]; then
    touch "$dir/initialising"
    as_postgres tee "$dir/patroni/post-bootstrap.sh" >/dev/null <<EOF
#!/bin/sh
# run by Patroni once, on the new primary: kiln's database
exec "$(scripts/postgres.sh bindir)/psql" -X -q "\$1" -c "CREATE DATABASE kiln"
EOF
    chmod 755 "$dir/patroni/post-bootstrap.sh"
    say "initialising PostgreSQL under Patroni: ${members[0]} on ${pg_ports[0]} first, then ${members[1]} on ${pg_ports[1]} as its standby"
    start_member 0
    wait_for_member 0 /primary 120 "the primary" || exit 1
    start_member 1
    wait_for_member 1 /sync 180 "the synchronous standby" || exit 1
    rm -f "$dir/initialising"
  else
    start_member 0
    start_member 1
  fi
  for ((i = 0; i < 120; i++)); do
    primary="$(primary_member)"
    if [ -n "$primary" ]; then
      say "PostgreSQL primary: $primary"
      return
    fi
    sleep 0.5
  done
  echo "cluster: no PostgreSQL server became the primary within 60 s; see $dir/patroni/*.log" >&2
  exit 1
}

# HAProxy asks each member's Patroni every second whether it holds the lease (GET /primary) and sends
# new connections to the one that does; when a member stops saying so (2 failed checks), it cuts the
# connections it sent there (on-marked-down shutdown-sessions): kiln's pools reconnect to the new one.
start_haproxy() {
  local pidfile="$dir/haproxy.pid" i
  if running "$pidfile"; then return; fi
  cat >"$dir/haproxy.cfg" <<EOF
# kiln (scripts/cluster.sh): the primary's address for kiln's servers
global
  maxconn 1000
  pidfile $pidfile
  stats socket $dir/haproxy.sock mode 600
defaults
  mode tcp
  timeout connect 2s
  timeout client 30m
  timeout server 30m
  timeout check 2s
listen primary
  bind 127.0.0.1:$haproxy_port
  option httpchk GET /primary
  http-check expect status 200
  default-server inter 1s fall 2 rise 2 on-marked-down shutdown-sessions
  server ${members[0]} 127.0.0.1:${pg_ports[0]} check port ${rest_ports[0]}
  server ${members[1]} 127.0.0.1:${pg_ports[1]} check port ${rest_ports[1]}
EOF
  "$haproxy" -D -f "$dir/haproxy.cfg"
  # HAProxy counts a server up until its checks say otherwise: wait until it sends to the primary alone,
  # or a kiln server starting now could meet the standby and lose its connection when it is marked down
  for ((i = 0; i < 60; i++)); do
    if [ "$(haproxy_up)" = "$(primary_member)" ]; then
      say "HAProxy on 127.0.0.1:$haproxy_port: the primary, whichever holds the lease ($dir/haproxy.cfg)"
      return
    fi
    sleep 0.5
  done
  echo "cluster: HAProxy did not settle on the primary ($(primary_member)) within 30 s; it counts up: $(haproxy_up)" >&2
  exit 1
}

# The members HAProxy counts up, by name, space-separated (its stats socket's "show servers state")
haproxy_up() {
  python3 - "$dir/haproxy.sock" <<'EOF' 2>/dev/null
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"show servers state primary\n")
text = b""
while chunk := s.recv(65536):
    text += chunk
# columns: be_id be_name srv_id srv_name srv_addr srv_op_state ...; op state 2 is running
up = [f[3] for f in (line.split() for line in text.decode().splitlines()) if len(f) > 5 and f[0].isdigit() and f[5] == "2"]
print(" ".join(up))
EOF
}

# The member whose Patroni says it holds the lease, by name, or nothing
primary_member() {
  local i
  for i in 0 1; do
    if patroni_says "${rest_ports[$i]}" /primary; then echo "${members[$i]}"; return; fi
  done
}

is_kiln_demo() {  # whether JAR is one of kiln's front-end jars (the demo's endpoints), not an app's own
  case "$(unzip -p "$JAR" META-INF/MANIFEST.MF 2>/dev/null | tr -d '\r' | sed -n 's/^Main-Class: *//p')" in
    kiln.*) return 0 ;;
    *) return 1 ;;
  esac
}

start_kiln() {  # INDEX
  local name="${names[$1]}" port="${kiln_ports[$1]}"
  local pidfile="$dir/kiln-$name.pid" log="$dir/kiln-$name.log"
  if running "$pidfile"; then return; fi
  : "${JAR:?give JAR, the jar of a front end (make cluster does)}"
  # its sessions are named in pg_stat_activity (application_name), e.g. to see which server holds the write lock
  local url="postgresql://kiln@127.0.0.1:$haproxy_port/kiln?ApplicationName=kiln-$name"
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

stop_pid() {  # PIDFILE WHAT [SECONDS]
  if running "$1"; then
    local pid i
    pid="$(cat "$1")"
    kill -CONT "$pid" 2>/dev/null || true  # a paused process (a fault test's SIGSTOP) cannot stop
    kill "$pid"
    for ((i = 0; i < ${3:-10} * 10; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid"; fi
    say "stopped $2"
  fi
  rm -f "$1"
}

# Stops everything, front to back. The standby's Patroni stops before the primary's, so that no
# failover starts; Patroni stops its PostgreSQL (fast shutdown) before it exits.
stop_all() {
  local i m primary=""
  if [ -s "$dir/nginx/nginx.pid" ]; then stop_pid "$dir/nginx/nginx.pid" nginx; fi
  for i in 0 1; do stop_pid "$dir/kiln-${names[$i]}.pid" "kiln ${names[$i]}"; done
  stop_pid "$dir/haproxy.pid" HAProxy
  for i in 0 1; do
    if patroni_says "${rest_ports[$i]}" /primary; then primary="$i"; fi
  done
  for i in 1 0; do
    if [ "$i" = "$primary" ]; then continue; fi
    m="${members[$i]}"
    stop_pid "$dir/patroni/$m.pid" "Patroni and PostgreSQL $m" 60
  done
  if [ -n "$primary" ]; then stop_pid "$dir/patroni/${members[$primary]}.pid" "Patroni and PostgreSQL ${members[$primary]} (the primary)" 60; fi
  for m in "${members[@]}"; do
    # a Patroni killed with -9 leaves its PostgreSQL running: stop it too
    if [ -e "$dir/$m/postmaster.pid" ]; then scripts/postgres.sh stop "$dir/$m" fast 2>/dev/null || true; fi
  done
  stop_pid "$dir/etcd.pid" etcd
}

need_programs() {
  local missing=() p
  for p in patroni etcd python3; do command -v "$p" >/dev/null || missing+=("$p"); done
  [ -x "$haproxy" ] || missing+=(haproxy)
  [ -x /usr/sbin/nginx ] || missing+=(nginx)
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "cluster: not installed: ${missing[*]}; apt-get install patroni etcd-server haproxy nginx-light postgresql" >&2
    exit 1
  fi
}

case "$cmd" in
  start)
    need_programs
    start_postgres
    start_haproxy
    start_kiln 0  # one at a time: the first creates the tables (the demo fills its own)
    start_kiln 1
    start_nginx
    say "up: http://127.0.0.1:$PORT/ (kiln ${names[0]} and ${names[1]} behind nginx, over PostgreSQL through HAProxy on $haproxy_port)"
    if is_kiln_demo; then
      say "try: curl -N http://127.0.0.1:${kiln_ports[1]}/updates/events & curl 'http://127.0.0.1:${kiln_ports[0]}/updates?queries=2'"
    else
      say "try: curl http://127.0.0.1:$PORT/healthz   (your app through nginx; each server: ${kiln_ports[*]}; logs: $dir/kiln-*.log)"
    fi
    say "     patronictl -c $dir/patroni/${members[0]}.yml list"
    ;;
  nginx)
    start_nginx
    ;;
  stop)
    stop_all
    ;;
  status)
    for i in 0 1; do
      if running "$dir/kiln-${names[$i]}.pid"; then say "kiln ${names[$i]}: running on ${kiln_ports[$i]}"; else say "kiln ${names[$i]}: stopped"; fi
    done
    if running "$dir/nginx/nginx.pid"; then say "nginx: running on $PORT"; else say "nginx: stopped"; fi
    if running "$dir/haproxy.pid"; then say "HAProxy: running on $haproxy_port"; else say "HAProxy: stopped"; fi
    if running "$dir/etcd.pid"; then say "etcd: running on ${etcd_ports[0]}"; else say "etcd: stopped"; fi
    for i in 0 1; do
      m="${members[$i]}"
      if ! running "$dir/patroni/$m.pid"; then say "PostgreSQL $m: stopped"
      elif patroni_says "${rest_ports[$i]}" /primary; then say "PostgreSQL $m: the primary, on ${pg_ports[$i]}"
      elif patroni_says "${rest_ports[$i]}" /sync; then say "PostgreSQL $m: the synchronous standby, on ${pg_ports[$i]}"
      else say "PostgreSQL $m: running on ${pg_ports[$i]}, neither primary nor synchronous standby yet"
      fi
    done
    ;;
  *)
    usage
    ;;
esac
