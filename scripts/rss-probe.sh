#!/bin/bash
# The Kilim jar's memory at one concurrency, quickly: starts http-kilim/target/kiln-kilim.jar with
# deploy/jvm.options and FLAGS on a free loopback port and a fresh data directory, runs `ab -k -c C`
# twice on /hello (a warm-up, then a timed run), and prints the peak RSS (VmHWM), the RSS a second
# after start, failed requests, req/s and server CPU per request of the timed run. Meant to run inside
# scripts/in-vps-cgroup.py, as ./ab-sweep.sh --vps runs a server (one CPU for server and ab, 1 GiB):
#
#   python3 scripts/in-vps-cgroup.py --cpus 1 -- scripts/rss-probe.sh base
#   python3 scripts/in-vps-cgroup.py --cpus 1 -- scripts/rss-probe.sh nr4 -XX:NewRatio=4 -Xlog:gc:file=/tmp/gc.log
#
# Writes results/rss-probe/NAME/: rss.txt (VmRSS every 0.5 s with the phase), ab outputs, smaps_rollup,
# GC.heap_info and, with -XX:NativeMemoryTracking=summary among the flags, nmt-start.txt and nmt-end.txt.
# Environment: JAVA (default java), ARGS (server options, e.g. "--transport NIO"), C (default 19500),
# N (requests per ab run, default 25 x C), PREWARM=N (N requests at c=10 first, then 7 s for the
# compiler's memory to be given back), HISTO=1 (a GC.class_histogram 6 s into the timed run, while
# every connection is open), NMT_AT_MB=M (with NMT on: nmt-high.txt and the compiles then running,
# the first time RSS reaches M MB).
# A quick probe for comparing flags, not a benchmark: the sweep (./ab-sweep.sh --vps) is the measure.
set -u
[ $# -ge 1 ] || { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
name=$1; shift
cd "$(dirname "$0")/.." || exit 2
out=results/rss-probe/$name; rm -rf "$out"; mkdir -p "$out/data"
C=${C:-19500}; N=${N:-$((C * 25))}
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
nmt() { case " $* " in *NativeMemoryTracking=summary*) return 0;; esac; return 1; }
# shellcheck disable=SC2086  # ARGS: server options, split on spaces
"${JAVA:-java}" @deploy/jvm.options "$@" -jar http-kilim/target/kiln-kilim.jar --port "$port" --bind 127.0.0.1 \
    --data "$out/data" ${ARGS:-} > "$out/server.log" 2>&1 &
pid=$!
for _ in $(seq 150); do curl -sf -o /dev/null "http://127.0.0.1:$port/hello" && break; sleep 0.2; done
sleep 1
(while kill -0 $pid 2>/dev/null; do
    rss=$(awk '/VmRSS/ {print int($2 / 1024)}' /proc/$pid/status)
    echo "$(date +%s.%N | cut -c1-14) $rss $(cat "$out/phase" 2>/dev/null)"
    if [ -n "${NMT_AT_MB:-}" ] && [ "${rss:-0}" -ge "$NMT_AT_MB" ] && [ ! -e "$out/nmt-high.txt" ]; then
        jcmd $pid VM.native_memory summary > "$out/nmt-high.txt" 2>&1
        jcmd $pid Compiler.queue > "$out/compiler-queue-high.txt" 2>&1
    fi
    sleep 0.5
done) > "$out/rss.txt" 2>/dev/null &
start_rss=$(awk '/VmRSS/ {print int($2 / 1024)}' /proc/$pid/status)
if nmt "$@"; then jcmd $pid VM.native_memory summary > "$out/nmt-start.txt" 2>&1; fi
if [ -n "${PREWARM:-}" ]; then
    echo prewarm > "$out/phase"
    ab -k -q -c 10 -n "$PREWARM" "http://127.0.0.1:$port/hello" > "$out/ab-prewarm.txt" 2>&1
    sleep 7  # HotSpot's chunk pool frees the compiler's arenas within 5 s, TrimNativeHeapInterval returns them
    prewarm_peak=$(awk '/VmHWM/ {print int($2 / 1024)}' /proc/$pid/status)
    prewarm_rss=$(awk '/VmRSS/ {print int($2 / 1024)}' /proc/$pid/status)
fi
echo warm > "$out/phase"
ab -k -q -c "$C" -n "$N" "http://127.0.0.1:$port/hello" > "$out/ab-warm.txt" 2>&1
echo timed > "$out/phase"
t0=$(awk '{print $14 + $15}' /proc/$pid/stat)
( [ -n "${HISTO:-}" ] && sleep 6 && jcmd $pid GC.class_histogram > "$out/histo.txt" 2>&1 ) &
ab -k -q -c "$C" -n "$N" "http://127.0.0.1:$port/hello" > "$out/ab.txt" 2>&1
t1=$(awk '{print $14 + $15}' /proc/$pid/stat)
echo end > "$out/phase"
peak=$(awk '/VmHWM/ {print int($2 / 1024)}' /proc/$pid/status)
cat /proc/$pid/smaps_rollup > "$out/smaps_rollup.txt"
if nmt "$@"; then jcmd $pid VM.native_memory summary > "$out/nmt-end.txt" 2>&1; fi
jcmd $pid GC.heap_info > "$out/heap.txt" 2>&1
kill $pid; wait $pid 2>/dev/null
failed=$(grep -h "Failed requests" "$out/ab-warm.txt" "$out/ab.txt" | awk '{print $3}' | paste -sd/)
rps=$(awk '/Requests per second/ {print $4}' "$out/ab.txt")
done_=$(awk '/Complete requests/ {print $3}' "$out/ab.txt")
us=$(python3 -c "print(round(($t1 - $t0) * 1e6 / $(getconf CLK_TCK) / max(${done_:-0}, 1), 1))")
steady=$(awk '$3 == "timed" {print $2}' "$out/rss.txt" | sort -n | awk '{a[NR] = $1} END {print a[int(NR / 2) + 1]}')
echo "$name: c=$C peak RSS ${peak} MB (start ${start_rss} MB,${PREWARM:+ after $PREWARM requests at c=10 peak ${prewarm_peak} MB and ${prewarm_rss} MB,} timed run's median ${steady} MB), failed ${failed:-?} (warm-up/timed), ${rps:-?} req/s, ${us} us/req server CPU; flags: $*"
