#!/usr/bin/env bash
# hostile-bench.sh: issue 36's attacks at full size against one front end started as `make demo`
# starts it (deploy/jvm.options: a 256 MB heap, exit on OutOfMemoryError; every limit at its default),
# with a well-behaved client asking /plaintext every 5 ms meanwhile:
#   1. 5,000 connections that each send a head declaring 64 KiB and 65,535 bytes of it, then nothing;
#   2. 20,000 connections that send only a head (two attacker processes of 10,000: the open-files
#      limit here is 20,000 a process).
# Each phase prints one line (HostileBench); at the end, whether the server is still alive.
# Run by `make bench-hostile SERVER=...`, which passes JAVA, JAR, FRONTEND_ARGS and the classpath.
set -euo pipefail

: "${JAR:?give JAR, the jar of the front end}" "${CP:?give CP, the test classpath of the conformance suite}"
JAVA=${JAVA:-java}
PORT=${PORT:-20090}
HOLD_S=${HOLD_S:-25}
FRONTEND_ARGS=${FRONTEND_ARGS:-}
cd "$(dirname "$0")/.."

if ss -ltn "sport = :$PORT" | grep -q LISTEN; then
  echo "hostile-bench: port $PORT is in use; give another with PORT=" >&2
  exit 2
fi
data=$(mktemp -d /tmp/kiln-hostile-XXXXXX)
log=$data.log
# shellcheck disable=SC2086 # FRONTEND_ARGS and JAVA_FLAGS are lists of arguments
$JAVA @deploy/jvm.options ${JAVA_FLAGS:-} -jar "$JAR" --port "$PORT" --bind 127.0.0.1 --data "$data" $FRONTEND_ARGS >"$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true; rm -rf "$data"' EXIT
for _ in $(seq 1 120); do
  grep -q " listening on " "$log" && break
  kill -0 $server 2>/dev/null || { echo "hostile-bench: the server exited at start:" >&2; cat "$log" >&2; exit 1; }
  sleep 0.5
done
grep -m1 " listening on " "$log"
grep -E "connection cap|limits:" "$log" | sed 's/^/  server: /' || true

bench() { "$JAVA" -Xmx512m -cp "$CP" kiln.conformance.HostileBench "$PORT" "$@"; }

echo "phase 1: 5,000 partial bodies"
bench partial 5000 1 "$HOLD_S" probe
sleep 2
echo "phase 2: 20,000 heads only (two attacker processes)"
bench heads 10000 200 "$HOLD_S" probe &
first=$!
bench heads 10000 500 "$HOLD_S" &
second=$!
wait $first $second
if kill -0 $server 2>/dev/null; then
  echo "server: alive; it has $(find /proc/$server/fd -mindepth 1 | wc -l) files open now"
else
  wait $server || echo "server: DEAD (exit status $?); its log: $log" >&2
  tail -20 "$log" >&2
  exit 1
fi
grep -E "refused|OutOfMemory" "$log" | tail -5 | sed 's/^/  server: /' || true
