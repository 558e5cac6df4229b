#!/usr/bin/env bash
# What a kiln server answers while its PostgreSQL is paused (every process of it stopped with
# SIGSTOP: a paused VM, a stuck machine), the measurement behind docs/scaling.md's "primary paused"
# row. It makes a throw-away PostgreSQL server in a temporary directory, starts JAR over it, times
# /healthz and /db before, during and after a pause of PAUSE seconds, and removes it all.
#
#   scripts/paused-postgres.sh [JAR]     # default http-kilim/target/kiln-kilim.jar
#
# Environment: PG_PORT (default 25700) and PORT (the server's, default 25701), PAUSE (default 3).
set -euo pipefail
cd "$(dirname "$0")/.."

jar="${1:-http-kilim/target/kiln-kilim.jar}"
pg_port="${PG_PORT:-25700}"
port="${PORT:-25701}"
pause="${PAUSE:-3}"
[ -f "$jar" ] || { echo "paused-postgres: no jar at $jar (make build)" >&2; exit 2; }

work="$(mktemp -d /tmp/kiln-paused-postgres.XXXXXX)"
chmod 755 "$work"  # as root PostgreSQL runs as the postgres user, which must enter it
server=""
stopped=()
cleanup() {
  if [ ${#stopped[@]} -gt 0 ]; then kill -CONT "${stopped[@]}" 2>/dev/null || true; fi
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  scripts/postgres.sh stop "$work/data" immediate 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

scripts/postgres.sh init "$work/data" "$pg_port" >/dev/null
url="$(scripts/postgres.sh url "$work/data")"
java -jar "$jar" --port "$port" --bind 127.0.0.1 --db "$url" >"$work/server.log" 2>&1 &
server=$!
for _ in $(seq 300); do
  if grep -q "listening on" "$work/server.log"; then break; fi
  kill -0 "$server" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
  sleep 0.2
done

ask() {  # WHEN PATH
  curl -s -m 60 -o "$work/body" -w "%{http_code} in %{time_total} s" "http://127.0.0.1:$port$2" >"$work/status" || true
  printf '%-8s %-9s %s  %s\n' "$1" "$2" "$(cat "$work/status")" "$(head -c 160 "$work/body" | tr '\n' ' ')"
}

ask before /healthz
ask before /db
postmaster="$(head -1 "$work/data/postmaster.pid")"
mapfile -t stopped < <(echo "$postmaster"; pgrep -P "$postmaster")
kill -STOP "${stopped[@]}"
ask paused /healthz
ask paused /db
sleep "$pause"
kill -CONT "${stopped[@]}"
stopped=()
sleep 1
ask resumed /healthz
ask resumed /db
