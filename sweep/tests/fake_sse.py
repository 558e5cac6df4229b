"""A small stand-in for a kiln front end's server-sent events, for the fan-out tests (standard library,
asyncio): GET /updates/events streams as the spec says (200, text/event-stream, chunked, `retry: 2000`
first, then one `id:/event: update/data:` event per committed /updates request with its committedAt in
microseconds since the epoch); GET /updates?queries=N commits (a counter) and answers JSON; /healthz and
/hello answer. Options make it misbehave as the tests need: skip ids, send a reload, end some streams.

    python3 fake_sse.py [--port 0] [--skip-every K] [--reload-at SEQ] [--end-after SEQ] [--delay-ms MS]

It prints "kiln-fake listening on http://127.0.0.1:PORT/" once it serves (servers.ready_line's form)."""

import argparse
import asyncio
import json
import random
import sys
import time


class Fake:
    def __init__(self, args):
        self.args = args
        self.seq = 0
        self.opened = 0
        self.streams = {}           # queue -> the stream's number (1, 2, ...)

    async def handle(self, reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                line = head.split(b"\r\n", 1)[0].decode("latin-1")
                _, target, _ = line.split(" ", 2)
                path, _, query = target.partition("?")
                if path == "/updates/events":
                    await self.stream(writer)
                    return
                if path == "/updates":
                    await asyncio.sleep(self.args.delay_ms / 1000)
                    self.seq += 1
                    await self.publish(self.seq)
                    body = json.dumps([{"id": random.randint(1, 10000), "randomNumber": random.randint(1, 10000)}])
                    kind = "application/json"
                elif path in ("/healthz", "/hello"):
                    body, kind = "ok", "text/plain"
                else:
                    writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                    await writer.drain()
                    continue
                data = body.encode()
                writer.write(f"HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {len(data)}\r\n\r\n".encode()
                             + data)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()

    async def stream(self, writer):
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"
                     b"X-Accel-Buffering: no\r\nTransfer-Encoding: chunked\r\n\r\n")
        self.chunk(writer, b": kiln fake\nretry: 2000\n\n")
        queue = asyncio.Queue()
        self.opened += 1
        self.streams[queue] = self.opened
        try:
            while True:
                data = await queue.get()
                if data is None:
                    writer.write(b"0\r\n\r\n")
                    await writer.drain()
                    return
                self.chunk(writer, data)
                await writer.drain()
        finally:
            self.streams.pop(queue, None)

    @staticmethod
    def chunk(writer, data):
        writer.write(b"%x\r\n%s\r\n" % (len(data), data))

    async def publish(self, seq):
        a = self.args
        if a.skip_every and seq % a.skip_every == 0:
            return
        now = time.time_ns() // 1000
        kind = "reload" if seq == a.reload_at else "update"
        event = (f'id: {seq}\nevent: {kind}\ndata: {{"seq":{seq},"committedAt":{now},'
                 f'"worlds":[{{"id":17,"randomNumber":4242}}]}}\n\n').encode()
        for q, number in list(self.streams.items()):
            q.put_nowait(event)
            if a.end_after and seq >= a.end_after and number % 2:
                q.put_nowait(None)          # every odd-numbered stream ends after this event
                self.streams.pop(q, None)


async def main(args):
    fake = Fake(args)
    server = await asyncio.start_server(fake.handle, "127.0.0.1", args.port, backlog=1024)
    port = server.sockets[0].getsockname()[1]
    print(f"kiln-fake listening on http://127.0.0.1:{port}/", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--skip-every", type=int, default=0, help="publish no event for every K-th commit (a gap)")
    p.add_argument("--reload-at", type=int, default=0, help="send `event: reload` instead of this seq's update")
    p.add_argument("--end-after", type=int, default=0, help="after this seq, end the odd-numbered streams")
    p.add_argument("--delay-ms", type=float, default=0, help="a commit's duration")
    try:
        asyncio.run(main(p.parse_args()))
    except KeyboardInterrupt:
        sys.exit(0)
