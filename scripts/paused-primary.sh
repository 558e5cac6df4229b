#!/usr/bin/env bash
# What a `make cluster` does when its PostgreSQL primary hangs: SIGSTOP of the primary's Patroni, its
# postmaster and every backend (a paused VM) for PAUSE seconds, with no one at the keyboard, while four
# clients send /updates?queries=2 to kiln a and b and record every answer; then SIGCONT. It prints the
# answers per 5 s, how long writes stopped, the longest request, where every commit went (the feed's
# last id against the writes acknowledged), and what became of the old primary (Patroni's log: it
# demotes itself and follows the new one). The measurement behind docs/scaling.md's "hung primary" row.
#
#   scripts/paused-primary.sh [DIR]      # DIR: the running cluster's directory, default ./cluster
#
# Environment: PAUSE (default 60), AFTER (seconds of load after SIGCONT, default 60), KILN_PORTS
# (default "8081 8082"), PATRONI_PORTS (default "28008 28009"), as given to scripts/cluster.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

dir="$(cd "${1:-cluster}" && pwd)"
pause="${PAUSE:-60}"
after="${AFTER:-60}"
read -r -a kiln_ports <<<"${KILN_PORTS:-8081 8082}"
read -r -a rest_ports <<<"${PATRONI_PORTS:-28008 28009}"

primary=""
for i in 0 1; do
  if python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:${rest_ports[$i]}/primary', timeout=2)" 2>/dev/null; then
    primary="pg$((i + 1))"
  fi
done
[ -n "$primary" ] || { echo "paused-primary: no member of the cluster in $dir holds the lease (scripts/cluster.sh status $dir)" >&2; exit 1; }
postmaster="$(head -1 "$dir/$primary/postmaster.pid")"
node=("$(cat "$dir/patroni/$primary.pid")" "$postmaster")
mapfile -t backends < <(pgrep -P "$postmaster")
node+=("${backends[@]}")
work="$(mktemp -d /tmp/kiln-paused-primary.XXXXXX)"
trap 'kill -CONT "${node[@]}" 2>/dev/null || true; rm -rf "$work"' EXIT

# marker.py: writes through kiln a and prints the id its commit has in kiln b's feed (the feed's newest)
cat >"$work/marker.py" <<'EOF'
import socket, sys, time, urllib.request
a, b = sys.argv[1], sys.argv[2]
s = socket.create_connection(("127.0.0.1", int(b)), timeout=10)
s.sendall(b"GET /updates/events HTTP/1.1\r\nHost: x\r\n\r\n")
time.sleep(0.5)
rows = urllib.request.urlopen(f"http://127.0.0.1:{a}/updates?queries=2", timeout=10).read().decode()
seen, last = b"", None
while last is None and len(seen) < 1 << 20:
    seen += s.recv(65536)
    lines = seen.decode().replace("\r\n", "\n").split("\n")
    for i, line in enumerate(lines):
        if line.startswith("data: ") and rows in line and lines[i - 2].startswith("id: "):
            last = int(lines[i - 2][4:])
print(last)
EOF
before="$(python3 "$work/marker.py" "${kiln_ports[@]}")"

echo "paused-primary: $((pause + after + 10)) s of /updates on ${kiln_ports[*]}; SIGSTOP of $primary (Patroni, postmaster and ${#backends[@]} processes) at 10 s for $pause s"
python3 - "$work" "$((pause + after + 10))" "${kiln_ports[@]}" <<'EOF' &
import json, sys, threading, time, urllib.error, urllib.request
work, seconds, ports = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
answers, lock, end = [], threading.Lock(), time.time() + seconds
def client(port):
    while time.time() < end:
        began = time.time()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/updates?queries=2", timeout=60) as r:
                status, body = r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            status, body = e.code, e.read().decode()[:300]
        except OSError as e:
            status, body = 0, str(e)
        with lock:
            answers.append((began, time.time(), status, body))
        time.sleep(0.02 if status == 200 else 0.2)
threads = [threading.Thread(target=client, args=(ports[i % len(ports)],)) for i in range(4)]
for t in threads: t.start()
for t in threads: t.join()
json.dump(answers, open(work + "/answers.json", "w"))
EOF
load=$!
sleep 10
date +%s.%N >"$work/stopped"
kill -STOP "${node[@]}"
sleep "$pause"
kill -CONT "${node[@]}"
echo "paused-primary: SIGCONT of $primary after $pause s"
wait "$load"

after_id="$(python3 "$work/marker.py" "${kiln_ports[@]}")"
python3 - "$work" "$before" "$after_id" <<'EOF'
import collections, json, sys
work, before, after = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
answers = sorted(json.load(open(work + "/answers.json")))
stopped = float(open(work + "/stopped").read())
acked = [x for x in answers if x[2] == 200]
failed = [x for x in answers if x[2] != 200]
print(f"answers: {len(answers)}, acknowledged {len(acked)}, failed {len(failed)}, longest request {max(x[1] - x[0] for x in answers):.1f} s")
for (status, text), n in collections.Counter((x[2], x[3][:140]) for x in failed).most_common(4):
    print(f"  {n} x {status} {text}")
last_failure = max([x[0] for x in failed if x[0] > stopped] or [stopped])
resumed = [x[0] for x in acked if x[0] > last_failure]
print(f"writes resumed {resumed[0] - stopped:.1f} s after the pause began" if resumed else "writes did not resume")
buckets = collections.defaultdict(lambda: [0, 0])
for x in answers:
    buckets[int((x[1] - stopped) // 5) * 5][x[2] == 200] += 1
print("per 5 s from the pause (acknowledged/failed): " + " ".join(f"{k}:{v[1]}/{v[0]}" for k, v in sorted(buckets.items())))
print(f"commits in the feed during the run: {after - before - 1} (ids {before + 1}..{after - 1}); acknowledged: {len(acked)}"
      " (equal: nothing acknowledged lost, nothing failed applied, unless a write of unknown outcome made up for a loss)")
EOF
echo "paused-primary: what $primary's Patroni did:"
grep -E "Demoting self|running pg_rewind from [a-z0-9]*$" "$dir/patroni/$primary.log" | tail -n 2 | cut -c1-140
scripts/cluster.sh status "$dir" | grep PostgreSQL
