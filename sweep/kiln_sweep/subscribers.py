"""The fan-out benchmark's Python client (`--fanout-client python`; the default is sweep/FanoutClient.java,
which speaks the same protocol at a sixth of the CPU per event): one process holding many server-sent-event
subscribers, each a `GET /updates/events` stream read with asyncio and aiohttp. kiln_sweep.fanout starts
these processes on the venv's python, as the report starts kiln_sweep.charts, and reads what they print:

    sweep/.venv/bin/python -m kiln_sweep.subscribers --port P --count N --result FILE [options]

Stdout, one JSON object per line: {"event": "connected", ...} once every subscriber has its stream or
the connect phase timed out; {"event": "progress", ...} every PROGRESS_S (events received so far, streams
the server ended, the last id seen); {"event": "done"} once FILE holds the result. A line "from ID" on
stdin restarts the measurement after event ID (what the warm-up's events counted is dropped). The process
stops when a line "stop" arrives on stdin, stdin closes, it gets SIGTERM or SIGINT, or --deadline passes:
whichever comes first.

A subscriber is *held* once its response is 200 text/event-stream and the stream's first bytes (the
`retry:` line) have arrived. Per stream it counts update events, gaps in their ids after the first one it
received, duplicates, `event: reload` (it fell behind the server's window) and whether the server ended
it. The latency of an event is the wall clock when this process read the bytes that completed it, minus
the event's "committedAt" (microseconds since the epoch when the commit became durable, the server's
wall clock on the same machine), kept in a histogram of 0.1 ms buckets up to 60 s (exact maximum aside).

What it costs: this is the benchmark's bottleneck (19,500 subscribers at 10 commits/s are 195,000 events
per second), so each stream is one task that reads raw chunks (`resp.content.iter_any()`), reads the
clock once per chunk, splits on blank lines and takes the id and committedAt with bytes operations: no
JSON parsing, no per-event objects, a list increment per event. Measured on this project's 2-core
machine (Nov 2026, kilim and loom at 5,000 subscribers, one event per chunk): about 28 us of client CPU
per event, so the two processes used 1.1-1.4 cores for 50,000 events/s; a raw asyncio.Protocol instead
of aiohttp saved only ~20 % per chunk. When the clients fall behind, events share chunks (15-23 per chunk
at 19,500 subscribers) and the cost per event falls to ~5 us: then the latencies include the clients' own
queue. Memory: ~12 KB RSS per idle subscriber, ~25 KB under load (476 MB for 19,500 in two processes).
Under --vps the clients run in the server's cgroup: they share its one CPU, as a client on the same $5
VPS would, so every microsecond they spend is taken from the server, and their memory counts against
its 1 GiB (at 19,500 subscribers the OOM killer took the client beside loom; beside kilim the group
peaked at 797 MB).
"""

import argparse
import asyncio
import json
import os
import resource
import signal
import sys
import threading
import time

import aiohttp

# Latency histogram: BUCKET_US per bucket, BUCKETS of them (60 s); slower events land in the last one
# (the exact maximum is kept apart).
BUCKET_US = 100
BUCKETS = 600000
MARKER = b'"committedAt":'
# What aiohttp reads ahead of the parser per stream before it stops reading the socket (its default is
# 64 KiB, and twice that before it pauses): a client that falls behind leaves the backlog in the kernel's
# socket buffer instead of its own heap. At 64 KiB, 19,500 subscribers that fell behind grew the two
# processes to 585 MB; under --vps the kernel's OOM killer then took the client (1 GiB for server and client).
READ_BUFSIZE = 2048
# Seconds between progress lines (the sweep's drain waits on them).
PROGRESS_S = 0.25


class Stats:
    """What one process saw, over all its subscribers."""

    def __init__(self, count):
        self.count = count
        self.held = 0
        self.connect_errors = {}
        self.hist = [0] * BUCKETS
        self.received = 0           # update events
        self.chunks = 0
        self.bytes = 0
        self.negative = 0           # events whose receipt came before their committedAt (clock granularity)
        self.max_us = -1
        self.gaps = 0               # ids missing between a subscriber's first and last event
        self.subscribers_with_gaps = 0
        self.duplicates = 0         # ids not above the last one seen on that stream
        self.reloads = 0            # event: reload (fell behind the server's window): a failure
        self.other_events = 0       # any other event type
        self.malformed = 0          # an id: event without a readable committedAt
        self.ended = 0              # streams the server ended (EOF or error) before we stopped
        self.end_errors = {}
        self.silent = 0             # held subscribers that received no update event at all
        self.first_ids = []         # per subscriber with events: its first and last id
        self.last_ids = []
        self.per_sub_min = None
        self.per_sub_max = None
        self.skip_until = 0         # events with ids up to this one are the warm-up's: not counted
        self.streams = []           # every held stream's [first id, last id, events, gaps]

    def restart(self, after_id):
        """The measurement starts again from the event after `after_id` (the warm-up's last): what was
        counted so far is dropped, and so are warm-up events still on their way. Held subscribers, connect
        errors and streams already ended stay."""
        self.skip_until = after_id
        self.hist = [0] * BUCKETS
        self.received = self.chunks = self.bytes = self.negative = self.duplicates = 0
        self.reloads = self.other_events = self.malformed = 0
        self.max_us = -1
        for ids in self.streams:
            ids[:] = [0, 0, 0, 0]

    def first_id(self):
        """The smallest first id any stream counted (None before any event)."""
        return min((ids[0] for ids in self.streams if ids[2]), default=None)

    def last_id(self):
        return max((ids[1] for ids in self.streams), default=0)

    def error(self, table, what):
        table[what] = table.get(what, 0) + 1

    def result(self):
        """The JSON-able result: the histogram sparse, per-subscriber ids reduced to what fanout needs."""
        return {
            "subscribers": self.count, "held": self.held, "connect_errors": self.connect_errors,
            "received": self.received, "chunks": self.chunks, "bytes": self.bytes,
            "bucket_us": BUCKET_US, "hist": {str(i): n for i, n in enumerate(self.hist) if n},
            "negative": self.negative, "max_us": self.max_us if self.max_us >= 0 else None,
            "gaps": self.gaps, "subscribers_with_gaps": self.subscribers_with_gaps, "duplicates": self.duplicates,
            "reloads": self.reloads, "other_events": self.other_events, "malformed": self.malformed,
            "ended": self.ended, "end_errors": self.end_errors, "silent": self.silent,
            "with_events": len(self.first_ids),
            "first_id_min": min(self.first_ids, default=None), "first_id_max": max(self.first_ids, default=None),
            "first_id_sum": sum(self.first_ids), "last_id_min": min(self.last_ids, default=None),
            "last_id_max": max(self.last_ids, default=None), "last_id_sum": sum(self.last_ids),
            "per_subscriber_min": self.per_sub_min, "per_subscriber_max": self.per_sub_max,
        }


def parse_events(data, st, now_us, ids):
    """Takes the complete events (blocks ended by a blank line) out of `data` into the Stats `st`, with
    receipt time `now_us`; `ids` is the stream's [first id, last id, events, gaps]. Returns the bytes
    after the last blank line (an event still incomplete)."""
    parts = data.split(b"\n\n")
    rest = parts.pop()
    hist = st.hist
    for ev in parts:
        if not ev.startswith(b"id:"):
            # retry:, keep-alive comments, a reload without an id
            if b"event: reload" in ev:
                st.reloads += 1
            elif ev.startswith(b"event:") or b"\nevent:" in ev:
                st.other_events += 1
            continue
        nl = ev.find(b"\n")
        if not ev.startswith(b"event: update", nl + 1):
            if b"event: reload" in ev:
                st.reloads += 1
            else:
                st.other_events += 1
            continue
        k = ev.find(MARKER, nl)
        if k < 0:
            st.malformed += 1
            continue
        k += 14
        j = ev.find(b",", k)
        if j < 0:
            j = ev.find(b"}", k)
        try:
            eid = int(ev[3:nl])
            d = now_us - int(ev[k:j])
        except ValueError:
            st.malformed += 1
            continue
        if eid <= st.skip_until:
            continue
        last = ids[1]
        if ids[2] == 0:
            ids[0] = eid
        elif eid != last + 1:
            if eid <= last:
                st.duplicates += 1
                continue
            ids[3] += eid - last - 1
        if d < 0:
            st.negative += 1
            d = 0
        if d > st.max_us:
            st.max_us = d
        b = d // BUCKET_US
        hist[b if b < BUCKETS else BUCKETS - 1] += 1
        st.received += 1
        ids[1] = eid
        ids[2] += 1
    return rest


class Subscribers:
    """`count` subscribers of http://host:port/path in this process."""

    def __init__(self, host, port, path, count, in_flight, connect_timeout_s):
        self.url = f"http://{host}:{port}{path}"
        self.count, self.in_flight, self.connect_timeout_s = count, in_flight, connect_timeout_s
        self.st = Stats(count)
        self.stopping = False
        self.connected = None       # asyncio.Event: every subscriber held or failed
        self.pending = count

    def _settled(self):
        self.pending -= 1
        if self.pending == 0:
            self.connected.set()

    async def subscriber(self, session, gate):
        st, ids, resp, held = self.st, [0, 0, 0, 0], None, False
        try:
            try:
                await gate.acquire()
                try:
                    resp = await session.get(self.url, headers={"Accept": "text/event-stream"})
                    if resp.status != 200:
                        st.error(st.connect_errors, f"status {resp.status}")
                        return
                    kind = resp.headers.get("Content-Type", "")
                    if not kind.startswith("text/event-stream"):
                        st.error(st.connect_errors, f"Content-Type {kind!r}, not text/event-stream")
                        return
                    first = await resp.content.readany()
                    if not first:
                        st.error(st.connect_errors, "closed before the stream's first bytes")
                        return
                finally:
                    gate.release()
            except asyncio.CancelledError:
                if not self.stopping:
                    st.error(st.connect_errors, f"no stream within {self.connect_timeout_s:g} s")
                raise
            except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as e:
                st.error(st.connect_errors, f"{type(e).__name__}: {e}"[:120])
                return
            finally:
                self._settled()
            held = True
            st.held += 1
            st.streams.append(ids)
            st.chunks += 1
            st.bytes += len(first)
            buf = parse_events(first, st, time.time_ns() // 1000, ids)
            clock = time.time_ns
            async for chunk in resp.content.iter_any():
                now = clock() // 1000
                st.chunks += 1
                st.bytes += len(chunk)
                if buf:
                    chunk = buf + chunk
                if b"\n\n" in chunk:
                    buf = parse_events(chunk, st, now, ids)
                else:
                    buf = chunk
            if not self.stopping:
                st.ended += 1
                st.error(st.end_errors, "end of stream")
        except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as e:
            if not self.stopping:
                st.ended += 1
                st.error(st.end_errors, f"{type(e).__name__}: {e}"[:120])
        finally:
            if resp is not None:
                resp.release()
            if ids[2]:
                st.first_ids.append(ids[0])
                st.last_ids.append(ids[1])
                st.gaps += ids[3]
                st.subscribers_with_gaps += ids[3] > 0
            n = ids[2]
            if not held:
                return
            st.per_sub_min = n if st.per_sub_min is None else min(st.per_sub_min, n)
            st.per_sub_max = n if st.per_sub_max is None else max(st.per_sub_max, n)

    async def run(self, stop, deadline_s):
        """Connects, says so, reports progress every PROGRESS_S until `stop` is set or the deadline passes."""
        self.connected = asyncio.Event()
        if self.count == 0:
            self.connected.set()
        end = time.monotonic() + deadline_s
        gate = asyncio.Semaphore(self.in_flight)
        connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, ttl_dns_cache=None)
        timeout = aiohttp.ClientTimeout(total=None, connect=None, sock_connect=self.connect_timeout_s, sock_read=None)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout, auto_decompress=False,
                                         read_bufsize=READ_BUFSIZE) as session:
            tasks = [asyncio.ensure_future(self.subscriber(session, gate)) for _ in range(self.count)]
            try:
                await asyncio.wait_for(self.connected.wait(), min(self.connect_timeout_s, deadline_s))
            except asyncio.TimeoutError:
                # Whatever has not got its stream by now is given up (counted as such): the phase is bounded.
                for t in tasks:
                    if not t.done():
                        t.cancel()
                await self.connected.wait()
            emit({"event": "connected", "held": self.st.held, "connect_errors": self.st.connect_errors})
            while not stop.is_set() and time.monotonic() < end:
                try:
                    await asyncio.wait_for(stop.wait(), min(PROGRESS_S, max(0.0, end - time.monotonic())))
                except asyncio.TimeoutError:
                    pass
                emit({"event": "progress", "received": self.st.received, "ended": self.st.ended,
                      "reloads": self.st.reloads, "chunks": self.st.chunks, "first_id": self.st.first_id(),
                      "last_id": self.st.last_id(),
                      "from": self.st.skip_until})
            self.stopping = True
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        return self.st.result()


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _watch_stdin(loop, stop, st):
    """A thread: a line "from ID" restarts the measurement after event ID (the warm-up's last); a line
    "stop" or the end of stdin stops the process."""
    for line in sys.stdin:
        words = line.split()
        if words[:1] == ["stop"]:
            break
        if words[:1] == ["from"] and len(words) == 2 and words[1].isdigit():
            loop.call_soon_threadsafe(st.restart, int(words[1]))
    loop.call_soon_threadsafe(stop.set)


async def _main(args):
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    subs = Subscribers(args.host, args.port, args.path, args.count, args.in_flight, args.connect_timeout)
    if not args.no_stdin:
        threading.Thread(target=_watch_stdin, args=(loop, stop, subs.st), daemon=True).start()
    result = await subs.run(stop, args.deadline)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result.update(pid=os.getpid(), cpu_user_s=usage.ru_utime, cpu_sys_s=usage.ru_stime)
    tmp = f"{args.result}.tmp"
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, args.result)
    emit({"event": "done"})


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m kiln_sweep.subscribers", description=__doc__.split("\n\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--path", default="/updates/events")
    p.add_argument("--count", type=int, required=True, help="subscribers in this process")
    p.add_argument("--in-flight", type=int, default=250, help="connects under way at once")
    p.add_argument("--connect-timeout", type=float, default=60.0, help="seconds for every subscriber to connect")
    p.add_argument("--deadline", type=float, default=600.0, help="seconds after which the process stops anyway")
    p.add_argument("--result", required=True, help="where the result JSON goes")
    p.add_argument("--no-stdin", action="store_true", help="do not watch stdin (stop by signal or deadline)")
    args = p.parse_args(argv)
    asyncio.run(_main(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
