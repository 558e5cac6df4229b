#!/usr/bin/env python3
"""Self-test of powercutfs.py: mounts the layer in a temp dir and checks its
power-cut semantics with real file operations.

Run:   cd powercut/fs && python3 -m unittest -v test_powercutfs
Bench: python3 powercut/fs/test_powercutfs.py bench [SECONDS]

Needs root (or fusermount3), /dev/fuse and the Debian packages python3-pyfuse3 and
fuse3; without them every test fails with the layer's own message naming what to install.
"""

import errno
import mmap
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "powercutfs.py")
PAGE = 4096
TIMEOUT = 15


class Layer:
    """One powercutfs.py child process mounted on MOUNT, backed by BACKING."""

    def __init__(self, backing, mount):
        self.backing, self.mount = backing, mount
        self.proc = subprocess.Popen([sys.executable, SCRIPT, backing, mount],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.lines = queue.Queue()
        self.err = []
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines.put),
                         daemon=True).start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, self.err.append),
                         daemon=True).start()
        first = self.readline()
        if first != "mounted":
            self.proc.wait(TIMEOUT)
            raise RuntimeError("layer did not mount (rc=%s): %s %s"
                               % (self.proc.returncode, first, self.stderr()))

    @staticmethod
    def _pump(stream, put):
        try:
            for raw in iter(stream.readline, b""):
                put(raw.decode().rstrip("\n"))
        except (OSError, ValueError):
            pass
        put(None)

    def stderr(self):
        time.sleep(0.05)
        return " | ".join(x for x in self.err if x)

    def readline(self):
        try:
            return self.lines.get(timeout=TIMEOUT)
        except queue.Empty:
            raise AssertionError("no answer from the layer within %ss" % TIMEOUT)

    def cmd(self, line):
        self.proc.stdin.write((line + "\n").encode())
        self.proc.stdin.flush()
        return self.readline()

    def finish(self, line="cut"):
        """Send a terminating command, wait for exit; returns (reply, rc)."""
        reply = self.cmd(line)
        rc = self.proc.wait(TIMEOUT)
        return reply, rc

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(TIMEOUT)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except OSError:
                pass
        if os.path.ismount(self.mount):
            subprocess.run(["umount", "-l", self.mount], stderr=subprocess.DEVNULL)


def parse(reply):
    """'ok cut a=1 b=2' -> {'a': 1, 'b': 2}"""
    out = {}
    for word in reply.split():
        if "=" in word:
            k, v = word.split("=", 1)
            out[k] = int(v)
    return out


def read_backing(path):
    with open(path, "rb") as f:
        return f.read()


_SKIP = None


def setUpModule():
    global _SKIP
    d = tempfile.mkdtemp(prefix="powercutfs-probe-")
    try:
        os.mkdir(os.path.join(d, "b"))
        os.mkdir(os.path.join(d, "m"))
        try:
            layer = Layer(os.path.join(d, "b"), os.path.join(d, "m"))
        except RuntimeError as e:
            _SKIP = str(e)
            return
        layer.finish()
        layer.kill()
    finally:
        shutil.rmtree(d, ignore_errors=True)


class PowerCutTest(unittest.TestCase):

    def setUp(self):
        if _SKIP:
            self.fail(_SKIP)
        self.dir = tempfile.mkdtemp(prefix="powercutfs-test-")
        self.backing = os.path.join(self.dir, "backing")
        self.mnt = os.path.join(self.dir, "mnt")
        os.mkdir(self.backing)
        os.mkdir(self.mnt)
        self.layers = []
        self.fds = []

    def tearDown(self):
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        for layer in self.layers:
            layer.kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    # helpers
    def mount(self):
        layer = Layer(self.backing, self.mnt)
        self.layers.append(layer)
        self.assertTrue(os.path.ismount(self.mnt))
        return layer

    def open(self, name, flags=os.O_RDWR | os.O_CREAT, mode=0o644):
        fd = os.open(os.path.join(self.mnt, name), flags, mode)
        self.fds.append(fd)
        return fd

    def close(self, fd):
        self.fds.remove(fd)
        os.close(fd)

    def close_all(self):
        for fd in self.fds:
            os.close(fd)
        self.fds = []

    def drop_page_cache(self, fd):
        """Make the next reads of fd come from the layer, not the kernel's cache."""
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)

    def cut(self, layer, line="cut"):
        self.close_all()
        reply, rc = layer.finish(line)
        self.assertEqual(rc, 0, layer.stderr())
        self.assertFalse(os.path.ismount(self.mnt))
        return reply

    def backing_file(self, name):
        return read_backing(os.path.join(self.backing, name))

    # tests
    def test_fdatasynced_data_survives_cut_unsynced_data_does_not(self):
        layer = self.mount()
        fd = self.open("data.mdb")
        os.pwrite(fd, b"A" * (2 * PAGE), 0)
        os.fdatasync(fd)
        os.pwrite(fd, b"C" * 100, 10)            # unsynced overwrite
        os.pwrite(fd, b"B" * PAGE, 2 * PAGE)     # unsynced extension
        self.drop_page_cache(fd)
        self.assertEqual(os.pread(fd, 3 * PAGE, 0),
                         b"A" * 10 + b"C" * 100 + b"A" * (2 * PAGE - 110) + b"B" * PAGE)
        st = parse(layer.cmd("stats"))
        self.assertEqual((st["fsyncs"], st["dirty_pages"]), (1, 2))
        reply = self.cut(layer)
        self.assertTrue(reply.startswith("ok cut "), reply)
        self.assertEqual(parse(reply), {"dropped_pages": 2, "dropped_bytes": 2 * PAGE,
                                        "files": 1})
        self.assertEqual(self.backing_file("data.mdb"), b"A" * (2 * PAGE))
        # a fresh layer serves what reached the disk
        layer2 = self.mount()
        fd = self.open("data.mdb", os.O_RDONLY)
        self.assertEqual(os.fstat(fd).st_size, 2 * PAGE)
        self.assertEqual(os.pread(fd, 3 * PAGE, 0), b"A" * (2 * PAGE))
        self.cut(layer2)

    def test_fsync_makes_data_durable_too(self):
        layer = self.mount()
        fd = self.open("f")
        os.pwrite(fd, b"x" * 5000, 0)
        os.fsync(fd)
        os.pwrite(fd, b"y" * 5000, 0)
        self.cut(layer)
        self.assertEqual(self.backing_file("f"), b"x" * 5000)

    def test_dsync_write_survives_cut_other_dirty_pages_do_not(self):
        layer = self.mount()
        fd = self.open("data.mdb")
        os.pwrite(fd, bytes(4 * PAGE), 0)
        os.fdatasync(fd)
        os.pwrite(fd, b"X" * PAGE, 2 * PAGE)                 # dirty, never synced
        os.pwrite(fd, b"Y" * 16, PAGE + 8)                   # dirty page 1
        meta = self.open("data.mdb", os.O_WRONLY | os.O_DSYNC)
        os.pwrite(meta, b"M" * 32, 0)                        # LMDB meta-page style
        os.pwrite(meta, b"N" * 8, PAGE)                      # lands on dirty page 1
        self.drop_page_cache(fd)
        self.assertEqual(os.pread(fd, 32, PAGE), b"N" * 8 + b"Y" * 16 + bytes(8))
        st = parse(layer.cmd("stats"))
        self.assertEqual(st["fsyncs"], 1)
        self.assertEqual(st["dsync_writes"], 2)
        self.assertEqual(st["dirty_pages"], 2)
        self.cut(layer)
        disk = self.backing_file("data.mdb")
        self.assertEqual(len(disk), 4 * PAGE)
        self.assertEqual(disk[:32], b"M" * 32)
        self.assertEqual(disk[PAGE:PAGE + 32], b"N" * 8 + bytes(24))
        self.assertEqual(disk[2 * PAGE:3 * PAGE], bytes(PAGE))

    def test_unsynced_size_extension_is_lost_on_cut(self):
        layer = self.mount()
        fd = self.open("f")
        os.pwrite(fd, b"a" * PAGE, 0)
        os.fdatasync(fd)
        os.ftruncate(fd, 3 * PAGE)
        os.pwrite(fd, b"b" * 10, 5 * PAGE)
        self.assertEqual(os.fstat(fd).st_size, 5 * PAGE + 10)
        self.drop_page_cache(fd)
        self.assertEqual(os.pread(fd, 3 * PAGE, PAGE), bytes(3 * PAGE))
        self.cut(layer)
        self.assertEqual(os.stat(os.path.join(self.backing, "f")).st_size, PAGE)
        self.assertEqual(self.backing_file("f"), b"a" * PAGE)

    def test_truncate_is_volatile_and_synced_truncate_reads_zeros(self):
        layer = self.mount()
        fd = self.open("f")
        os.pwrite(fd, b"a" * (3 * PAGE), 0)
        os.fsync(fd)
        os.ftruncate(fd, 100)                 # shrink, then grow again: tail is zeros
        os.ftruncate(fd, 2 * PAGE)
        self.drop_page_cache(fd)
        self.assertEqual(os.pread(fd, 2 * PAGE, 0), b"a" * 100 + bytes(2 * PAGE - 100))
        self.cut(layer)
        self.assertEqual(self.backing_file("f"), b"a" * (3 * PAGE))   # truncate lost
        layer = self.mount()
        fd = self.open("f")
        os.ftruncate(fd, 100)
        os.pwrite(fd, b"z", PAGE + 5)
        os.fsync(fd)
        self.cut(layer)
        self.assertEqual(self.backing_file("f"), b"a" * 100 + bytes(PAGE + 5 - 100) + b"z")

    def _random_cut(self, seed):
        layer = self.mount()
        fd = self.open("big")
        os.pwrite(fd, bytes(64 * PAGE), 0)
        os.fdatasync(fd)
        os.pwrite(fd, b"\xff" * (64 * PAGE), 0)      # 64 dirty pages, no sync
        os.pwrite(fd, b"\xff" * PAGE, 64 * PAGE)     # an unsynced extension
        reply = self.cut(layer, "cut-random %d" % seed)
        disk = self.backing_file("big")
        self.assertEqual(len(disk), 64 * PAGE)        # size change dropped
        kept = [p for p in range(64) if disk[p * PAGE:(p + 1) * PAGE] == b"\xff" * PAGE]
        lost = [p for p in range(64) if disk[p * PAGE:(p + 1) * PAGE] == bytes(PAGE)]
        self.assertEqual(len(kept) + len(lost), 64)   # pages written whole or not at all
        self.assertEqual(parse(reply)["kept_pages"], len(kept), reply)
        os.unlink(os.path.join(self.backing, "big"))
        return kept

    def test_cut_random_keeps_some_but_not_all_pages_deterministically(self):
        kept = self._random_cut(42)
        self.assertTrue(0 < len(kept) < 64, kept)
        self.assertEqual(self._random_cut(42), kept)
        self.assertNotEqual(self._random_cut(7), kept)

    def test_fail_fsync_drops_pages_retry_succeeds_data_never_on_disk_fsyncgate(self):
        layer = self.mount()
        fd = self.open("data.mdb")
        os.pwrite(fd, b"o" * PAGE, 0)
        os.fsync(fd)
        os.pwrite(fd, b"D" * 64, 0)
        self.assertEqual(layer.cmd("fail-fsync 1"), "ok")
        with self.assertRaises(OSError) as cm:
            os.fdatasync(fd)
        self.assertEqual(cm.exception.errno, errno.EIO)
        self.drop_page_cache(fd)                     # served by the layer, not the cache
        self.assertEqual(os.pread(fd, 128, 0), b"D" * 64 + b"o" * 64)
        os.fdatasync(fd)                             # the retry "succeeds"
        self.assertEqual(parse(layer.cmd("stats"))["dirty_pages"], 0)
        self.assertEqual(os.pread(fd, 64, 0), b"D" * 64)
        self.cut(layer)
        self.assertEqual(self.backing_file("data.mdb"), b"o" * PAGE)

    def test_fail_writes_range_gives_eio_outside_ok_heal_ends_it(self):
        layer = self.mount()
        fd = self.open("data.mdb")
        os.pwrite(fd, bytes(4 * PAGE), 0)
        self.assertEqual(layer.cmd("fail-writes data.mdb 0 %d" % (2 * PAGE)), "ok")
        for off in (0, PAGE + 10, 2 * PAGE - 1):
            with self.assertRaises(OSError) as cm:
                os.pwrite(fd, b"m" * 8, off)
            self.assertEqual(cm.exception.errno, errno.EIO)
        self.assertEqual(os.pwrite(fd, b"p" * 8, 2 * PAGE), 8)
        other = self.open("lock.mdb")
        self.assertEqual(os.pwrite(other, b"l" * 8, 0), 8)   # other files unaffected
        self.assertEqual(parse(layer.cmd("stats"))["failed_writes"], 3)
        self.assertEqual(layer.cmd("heal"), "ok")
        self.assertEqual(os.pwrite(fd, b"m" * 8, 0), 8)
        self.assertEqual(os.pread(fd, 8, 0), b"m" * 8)
        self.cut(layer)

    def test_mmap_readonly_shared_sees_pwrite(self):
        layer = self.mount()
        fd = self.open("data.mdb")
        os.pwrite(fd, b"a" * (4 * PAGE), 0)
        os.fdatasync(fd)
        ro = self.open("data.mdb", os.O_RDONLY)
        m = mmap.mmap(ro, 4 * PAGE, mmap.MAP_SHARED, mmap.PROT_READ)
        try:
            self.assertEqual(m[:4], b"aaaa")
            os.pwrite(fd, b"W" * 10, 100)               # page already mapped
            os.pwrite(fd, b"V" * PAGE, 3 * PAGE)         # whole page
            self.assertEqual(m[98:112], b"aaWWWWWWWWWWaa")
            self.assertEqual(m[3 * PAGE:3 * PAGE + 4], b"VVVV")
        finally:
            m.close()
        # a new mapping after dropping the page cache faults pages in through
        # the layer's read path
        self.drop_page_cache(fd)
        reads = parse(layer.cmd("stats"))["reads"]
        m = mmap.mmap(ro, 4 * PAGE, mmap.MAP_SHARED, mmap.PROT_READ)
        try:
            self.assertEqual(m[98:112], b"aaWWWWWWWWWWaa")
            self.assertEqual(m[3 * PAGE:3 * PAGE + 4], b"VVVV")
        finally:
            m.close()
        self.assertGreater(parse(layer.cmd("stats"))["reads"], reads)
        self.cut(layer)
        self.assertEqual(self.backing_file("data.mdb"), b"a" * (4 * PAGE))

    def test_metadata_create_rename_unlink_reach_backing_dir_at_once(self):
        layer = self.mount()
        fd = self.open("a")
        self.assertTrue(os.path.exists(os.path.join(self.backing, "a")))
        os.pwrite(fd, b"1234", 0)
        os.rename(os.path.join(self.mnt, "a"), os.path.join(self.mnt, "b"))
        self.assertEqual(sorted(os.listdir(self.backing)), ["b"])
        self.assertEqual(sorted(os.listdir(self.mnt)), ["b"])
        os.fsync(fd)                                   # the open fd follows the rename
        self.assertEqual(self.backing_file("b"), b"1234")
        self.close(self.open("c"))
        os.unlink(os.path.join(self.mnt, "c"))
        self.assertEqual(sorted(os.listdir(self.backing)), ["b"])
        with self.assertRaises(OSError):
            os.mkdir(os.path.join(self.mnt, "d"))
        self.assertGreater(os.statvfs(self.mnt).f_blocks, 0)
        self.cut(layer)

    def test_control_errors_and_unmount_alias(self):
        layer = self.mount()
        self.assertEqual(layer.cmd("frobnicate 1"), "error unknown command: frobnicate 1")
        self.assertTrue(layer.cmd("fail-fsync x").startswith("error"))
        reply = self.cut(layer, "unmount")
        self.assertTrue(reply.startswith("ok unmount"), reply)
        self.assertIn("dropped_pages=0", reply)

    def test_exits_0_and_unmounts_after_cut(self):
        layer = self.mount()
        fd = self.open("f")
        os.pwrite(fd, b"q" * 10, 0)
        self.cut(layer)
        self.assertFalse(os.path.ismount(self.mnt))
        self.assertEqual(self.backing_file("f"), b"")

    def test_exits_0_and_unmounts_after_stdin_eof(self):
        layer = self.mount()
        fd = self.open("f")
        os.pwrite(fd, b"q" * 10, 0)
        self.close_all()
        layer.proc.stdin.close()
        self.assertEqual(layer.proc.wait(TIMEOUT), 0)
        self.assertFalse(os.path.ismount(self.mnt))
        self.assertEqual(self.backing_file("f"), b"")

    def test_exits_0_and_unmounts_after_sigterm(self):
        layer = self.mount()
        layer.proc.send_signal(signal.SIGTERM)
        self.assertEqual(layer.proc.wait(TIMEOUT), 0)
        self.assertFalse(os.path.ismount(self.mnt))

    def test_no_dead_mount_after_sigkill(self):
        layer = self.mount()
        layer.proc.kill()
        layer.proc.wait(TIMEOUT)
        deadline = time.time() + 5   # the fusermount3 auto_unmount watchdog
        while os.path.ismount(self.mnt) and time.time() < deadline:
            time.sleep(0.05)
        self.assertFalse(os.path.ismount(self.mnt))

    def test_usage_error_exit_2(self):
        r = subprocess.run([sys.executable, SCRIPT], capture_output=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"usage", r.stderr)
        r = subprocess.run([sys.executable, SCRIPT, self.backing, "/nonexistent-dir"],
                           capture_output=True)
        self.assertEqual(r.returncode, 2)

    def test_zz_benchmark_sync_cycles_per_second(self):
        for base in bench_bases():
            res = bench(self, seconds=0.7, base=base)
            print("\n  bench on %s: commit cycle (2x 4 KiB pwrite, fdatasync, 4 KiB O_DSYNC "
                  "pwrite) direct %.0f/s, through powercutfs %.0f/s; 4 KiB pwrite+fdatasync "
                  "direct %.0f/s, through powercutfs %.0f/s"
                  % (res["fs"], res["direct_commit"], res["layer_commit"],
                     res["direct_sync"], res["layer_sync"]), file=sys.stderr, end="")
            self.assertGreater(res["layer_commit"], 0)
        print(file=sys.stderr)


def _cycles(dirpath, seconds):
    """Per second: (commit cycles like LMDB's: 2 pwrites + fdatasync + O_DSYNC
    meta write, plain 4 KiB pwrite + fdatasync cycles)."""
    path = os.path.join(dirpath, "bench.mdb")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    meta = os.open(path, os.O_WRONLY | os.O_DSYNC)
    try:
        page = b"p" * PAGE
        os.pwrite(fd, bytes(256 * PAGE), 0)
        os.fdatasync(fd)
        out = []
        for commit in (True, False):
            n = 0
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < seconds:
                p = 2 + n % 250
                os.pwrite(fd, page, p * PAGE)
                if commit:
                    os.pwrite(fd, page, (p + 1) * PAGE)
                os.fdatasync(fd)
                if commit:
                    os.pwrite(meta, page, (n % 2) * PAGE)
                n += 1
            out.append(n / (time.perf_counter() - t0))
        return out
    finally:
        os.close(meta)
        os.close(fd)
        os.unlink(path)


def bench(test=None, seconds=3.0, base=None):
    """Cycles per second directly on a backing dir under *base* and through a
    layer on it."""
    d = tempfile.mkdtemp(prefix="powercutfs-bench-", dir=base)
    try:
        backing, mnt = os.path.join(d, "b"), os.path.join(d, "m")
        os.mkdir(backing)
        os.mkdir(mnt)
        direct_commit, direct_sync = _cycles(backing, seconds)
        layer = Layer(backing, mnt)
        if test is not None:
            test.layers.append(layer)
        try:
            layer_commit, layer_sync = _cycles(mnt, seconds)
            stats = layer.cmd("stats")
        finally:
            layer.finish("unmount")
            layer.kill()
        return {"direct_commit": direct_commit, "layer_commit": layer_commit,
                "direct_sync": direct_sync, "layer_sync": layer_sync, "stats": stats,
                "fs": subprocess.run(["stat", "-f", "-c", "%T", d], capture_output=True,
                                     text=True).stdout.strip()}
    finally:
        shutil.rmtree(d, ignore_errors=True)


def bench_bases():
    """The default temp dir (a disk) and, if there, /dev/shm (tmpfs: fsync is
    free, so the numbers show the layer's own cost)."""
    return [None] + (["/dev/shm"] if os.path.isdir("/dev/shm") else [])


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "bench":
        for base in bench_bases():
            r = bench(seconds=float(sys.argv[2]) if len(sys.argv) > 2 else 3.0, base=base)
            print("backing on %s: per second   direct   powercutfs" % r["fs"])
            print("commit cycle     %8.0f   %8.0f   (2x 4 KiB pwrite, fdatasync, "
                  "4 KiB O_DSYNC pwrite)" % (r["direct_commit"], r["layer_commit"]))
            print("write+fdatasync  %8.0f   %8.0f   (4 KiB pwrite, fdatasync)"
                  % (r["direct_sync"], r["layer_sync"]))
            print("layer " + r["stats"])
    else:
        unittest.main()
