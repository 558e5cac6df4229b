#!/usr/bin/env python3
"""powercutfs: a FUSE layer that emulates a power cut for a flat database directory.

Usage: powercutfs.py BACKING_DIR MOUNTPOINT

The files of BACKING_DIR appear in MOUNTPOINT.  Creation, unlink and rename go to
BACKING_DIR at once (metadata is treated as journaled), but file content and size
changes stay in memory ("volatile", like dirty pages in the page cache) until they
are made durable by fsync/fdatasync, or are written through a handle opened with
O_DSYNC/O_SYNC.  On a "cut" the volatile state is thrown away, so BACKING_DIR holds
exactly what reached the disk.  See README.md for the model and the control
protocol (line based, on stdin/stdout).
"""

import errno
import os
import random
import signal
import stat
import subprocess
import sys
import time

USAGE = "usage: powercutfs.py BACKING_DIR MOUNTPOINT  (both existing directories)"
INSTALL_HINT = "apt-get install -y python3-pyfuse3 fuse3"


def _import_pyfuse3():
    """Import pyfuse3/trio; if this interpreter lacks them but the Debian one has
    them (python3-pyfuse3 installs into /usr/lib/python3/dist-packages), re-exec
    under /usr/bin/python3."""
    try:
        import pyfuse3  # noqa: F401
        import trio  # noqa: F401
        return
    except ImportError as e:
        err = e
    system_python = "/usr/bin/python3"
    if (os.environ.get("POWERCUTFS_REEXEC") != "1"
            and os.path.exists(system_python)
            and os.path.realpath(sys.executable) != os.path.realpath(system_python)):
        os.environ["POWERCUTFS_REEXEC"] = "1"
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(system_python, [system_python, os.path.abspath(__file__)] + sys.argv[1:])
    print("powercutfs: cannot import pyfuse3/trio (%s); install them with: %s"
          % (err, INSTALL_HINT), file=sys.stderr, flush=True)
    sys.exit(3)


PAGE = 4096
NO_TRUNC = sys.maxsize  # zero_from value meaning "no volatile truncation pending"
IMPLIED_SYNC_WINDOW = 1.0  # seconds, see Ops.fsync
TRACE = os.environ.get("POWERCUTFS_TRACE") == "1"

# open flags worth naming in traces
_FLAG_NAMES = [(getattr(os, n), n) for n in
               ("O_WRONLY", "O_RDWR", "O_APPEND", "O_DSYNC", "O_SYNC", "O_TRUNC",
                "O_DIRECT", "O_NOATIME", "O_CLOEXEC", "O_LARGEFILE", "O_NONBLOCK")
               if getattr(os, n, 0)]


def flag_names(flags):
    names = []
    for value, name in _FLAG_NAMES:
        if name == "O_DSYNC" and (flags & os.O_SYNC) == os.O_SYNC:
            continue  # O_SYNC includes the O_DSYNC bit on Linux
        if (flags & value) == value:
            names.append(name)
    if not flags & (os.O_WRONLY | os.O_RDWR):
        names.insert(0, "O_RDONLY")
    return "|".join(names) + " (0x%x)" % flags


def trace(msg):
    if TRACE:
        print("powercutfs: " + msg, file=sys.stderr, flush=True)


class Node:
    """One regular file: its backing fd plus the volatile overlay."""
    __slots__ = ("ino", "name", "fd", "size", "disk_size", "zero_from", "dirty",
                 "ghost", "lookups", "opens", "linked", "mtime_ns")

    def __init__(self, ino, name, fd, st):
        self.ino = ino
        self.name = name          # bytes, current name in the flat directory
        self.fd = fd              # O_RDWR fd on the backing file (follows renames)
        self.size = st.st_size    # logical (volatile) size
        self.disk_size = st.st_size  # size of the backing file
        # Backing bytes at offsets >= zero_from are stale (a volatile truncate
        # cut them off) and read as zeros unless a dirty/ghost page covers them.
        self.zero_from = NO_TRUNC
        self.dirty = {}           # page number -> bytearray(PAGE), volatile
        # Pages whose writeback "failed" (fail-fsync): not on disk, not dirty,
        # but still served to reads, like Linux's page cache after an EIO fsync.
        self.ghost = {}
        self.lookups = 0
        self.opens = 0
        self.linked = True
        self.mtime_ns = st.st_mtime_ns

    def volatile(self):
        return bool(self.dirty) or self.size != self.disk_size or self.zero_from != NO_TRUNC


class Handle:
    __slots__ = ("node", "flags", "sync", "implied_until")

    def __init__(self, node, flags):
        self.node = node
        self.flags = flags
        self.sync = bool(flags & (os.O_DSYNC | os.O_SYNC))
        self.implied_until = 0.0  # see Ops.fsync


class Stats:
    def __init__(self):
        self.writes = 0
        self.bytes = 0
        self.fsyncs = 0
        self.dsync_writes = 0
        self.implied_syncs = 0
        self.failed_fsyncs = 0
        self.failed_writes = 0
        self.reads = 0
        self.read_bytes = 0


def _fuse_errors(fn):
    """Map OSError to FUSEError(errno) and anything unexpected to EIO (logged)."""
    import functools
    import pyfuse3

    @functools.wraps(fn)
    async def wrapper(self, *args, **kwargs):
        try:
            return await fn(self, *args, **kwargs)
        except pyfuse3.FUSEError:
            raise
        except OSError as e:
            trace("%s%r -> %s" % (fn.__name__, args[:2], e))
            raise pyfuse3.FUSEError(e.errno or errno.EIO)
        except Exception as e:  # pragma: no cover - defensive
            print("powercutfs: internal error in %s: %r" % (fn.__name__, e),
                  file=sys.stderr, flush=True)
            raise pyfuse3.FUSEError(errno.EIO)
    return wrapper


def make_ops_class():
    import pyfuse3
    import trio

    FUSEError = pyfuse3.FUSEError
    ROOT = pyfuse3.ROOT_INODE

    class Ops(pyfuse3.Operations):
        enable_writeback_cache = False

        def __init__(self, backing):
            super().__init__()
            self.backing = os.fsencode(os.path.abspath(backing))
            self.dir_fd = os.open(self.backing, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            self.nodes = {}      # fuse inode -> Node
            self.by_name = {}    # name -> Node (linked files only)
            self.handles = {}    # fh -> Handle
            self.next_ino = ROOT + 1
            self.next_fh = 1
            self.stats = Stats()
            self.fail_fsync = 0
            self.write_faults = []  # (name bytes, lo, hi)
            self.dead = False       # set by a cut: every later request fails with EIO
            self.exit_reply = None  # line printed on stdout after unmounting
            self.exit_code = 0
            self.cancel_scope = None

        # ------------------------------------------------------------ helpers
        def _check_alive(self):
            if self.dead:
                raise FUSEError(errno.EIO)

        def _path(self, name):
            return os.path.join(self.backing, name)

        def _sync_dir(self):
            os.fsync(self.dir_fd)

        def _node_for_name(self, name):
            node = self.by_name.get(name)
            if node is not None:
                return node
            try:
                st = os.lstat(self._path(name))
            except FileNotFoundError:
                raise FUSEError(errno.ENOENT)
            if not stat.S_ISREG(st.st_mode):
                raise FUSEError(errno.ENOENT)  # flat layer: regular files only
            fd = os.open(self._path(name), os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
            node = Node(self.next_ino, name, fd, os.fstat(fd))
            self.next_ino += 1
            self.nodes[node.ino] = node
            self.by_name[name] = node
            return node

        def _node(self, ino):
            node = self.nodes.get(ino)
            if node is None:
                raise FUSEError(errno.ENOENT)
            return node

        def _maybe_free(self, node):
            if not node.linked and node.lookups <= 0 and node.opens <= 0:
                self.nodes.pop(node.ino, None)
                try:
                    os.close(node.fd)
                except OSError:
                    pass

        def _attr(self, node):
            # mtime is NOT bumped by volatile writes: the kernel (FUSE with
            # auto_inval_data) throws away a file's page cache whenever the
            # mtime it sees changes, which would defeat LMDB's mmap.
            return self._entry(node.ino, os.fstat(node.fd), node.size,
                               (node.size + 511) // 512, node.mtime_ns)

        def _root_attr(self):
            st = os.fstat(self.dir_fd)
            return self._entry(ROOT, st, st.st_size, st.st_blocks, st.st_mtime_ns)

        @staticmethod
        def _entry(ino, st, size, blocks, mtime_ns):
            a = pyfuse3.EntryAttributes()
            a.st_ino = ino
            a.generation = 0
            a.entry_timeout = 1.0
            a.attr_timeout = 1.0
            a.st_mode = st.st_mode
            a.st_nlink = st.st_nlink
            a.st_uid = st.st_uid
            a.st_gid = st.st_gid
            a.st_rdev = 0
            a.st_size = size
            a.st_blksize = PAGE
            a.st_blocks = blocks
            a.st_atime_ns = st.st_atime_ns
            a.st_mtime_ns = mtime_ns
            a.st_ctime_ns = st.st_ctime_ns
            return a

        def _backing_read(self, node, off, length):
            """What the disk holds at [off, off+length), zero-padded past its end
            and past a pending volatile truncation."""
            data = os.pread(node.fd, length, off)
            valid = min(node.zero_from - off, len(data))
            if valid < length:
                if valid <= 0:
                    return bytes(length)
                data = data[:valid] + bytes(length - valid)
            return data

        def _page_for_write(self, node, p):
            pg = node.dirty.get(p)
            if pg is None:
                g = node.ghost.pop(p, None)
                pg = g if g is not None else bytearray(self._backing_read(node, p * PAGE, PAGE))
                node.dirty[p] = pg
            return pg

        def _patch_pages(self, node, off, buf, only_cached):
            """Copy buf into the overlay pages it touches.  With only_cached, only
            pages already held in memory (dirty or ghost) or pages whose backing
            copy is hidden by a volatile truncation are patched."""
            end = off + len(buf)
            p = off // PAGE
            mv = memoryview(buf)
            while p * PAGE < end:
                pstart = p * PAGE
                lo = max(off, pstart)
                hi = min(end, pstart + PAGE)
                if only_cached:
                    pg = node.dirty.get(p)
                    if pg is None:
                        pg = node.ghost.get(p)
                    if pg is None and hi > node.zero_from:
                        pg = self._page_for_write(node, p)
                elif lo == pstart and hi == pstart + PAGE:
                    pg = bytearray(mv[lo - off:hi - off])  # whole page: no load needed
                    node.ghost.pop(p, None)
                    node.dirty[p] = pg
                    pg = None
                else:
                    pg = self._page_for_write(node, p)
                if pg is not None:
                    pg[lo - pstart:hi - pstart] = mv[lo - off:hi - off]
                p += 1

        def _truncate(self, node, size):
            if size < node.size:
                node.zero_from = min(node.zero_from, size)
                first_gone = (size + PAGE - 1) // PAGE
                for pages in (node.dirty, node.ghost):
                    for p in [p for p in pages if p >= first_gone]:
                        del pages[p]
                    if size % PAGE:
                        pg = pages.get(size // PAGE)
                        if pg is not None:
                            pg[size % PAGE:] = bytes(PAGE - size % PAGE)
            node.size = size

        def _flush(self, node, datasync):
            """Make the node's volatile state durable."""
            fd = node.fd
            if node.zero_from < node.disk_size:
                os.ftruncate(fd, node.zero_from)
            size = node.size
            for p in sorted(node.dirty):
                pstart = p * PAGE
                if pstart >= size:
                    continue
                pg = node.dirty[p]
                os.pwrite(fd, pg if pstart + PAGE <= size else pg[:size - pstart], pstart)
            if os.fstat(fd).st_size != size:
                os.ftruncate(fd, size)
            if datasync:
                os.fdatasync(fd)
            else:
                os.fsync(fd)
            node.dirty.clear()
            node.zero_from = NO_TRUNC
            node.disk_size = size

        # ------------------------------------------------------------ control
        def stats_line(self):
            s = self.stats
            dirty_pages = sum(len(n.dirty) for n in self.nodes.values())
            ghost_pages = sum(len(n.ghost) for n in self.nodes.values())
            return ("ok writes=%d bytes=%d fsyncs=%d dirty_pages=%d dirty_bytes=%d "
                    "dsync_writes=%d implied_syncs=%d failed_fsyncs=%d failed_writes=%d "
                    "reads=%d read_bytes=%d ghost_pages=%d files=%d"
                    % (s.writes, s.bytes, s.fsyncs, dirty_pages, dirty_pages * PAGE,
                       s.dsync_writes, s.implied_syncs, s.failed_fsyncs, s.failed_writes,
                       s.reads, s.read_bytes, ghost_pages, len(self.by_name)))

        def cut(self, seed=None):
            """Power cut.  Returns the reply text (without 'ok ')."""
            dropped_pages = files = kept = 0
            rng = random.Random(seed) if seed is not None else None
            nodes = sorted((n for n in self.nodes.values() if n.linked), key=lambda n: n.name)
            for node in nodes:
                if not node.volatile():
                    continue
                files += 1
                if rng is None:
                    dropped_pages += len(node.dirty)
                    continue
                # The disk wrote a random subset of the dirty pages; size changes
                # (extensions and truncations) are lost.
                wrote = False
                for p in sorted(node.dirty):
                    if rng.random() < 0.5 and p * PAGE < node.disk_size:
                        pg = node.dirty[p]
                        n = min(PAGE, node.disk_size - p * PAGE)
                        try:
                            os.pwrite(node.fd, pg[:n], p * PAGE)
                            kept += 1
                            wrote = True
                            continue
                        except OSError as e:
                            print("powercutfs: cut-random write failed: %s" % e,
                                  file=sys.stderr, flush=True)
                    dropped_pages += 1
                if wrote:
                    os.fsync(node.fd)
            for node in self.nodes.values():
                node.dirty.clear()
                node.ghost.clear()
            self.dead = True
            reply = "cut dropped_pages=%d dropped_bytes=%d files=%d" % (
                dropped_pages, dropped_pages * PAGE, files)
            if rng is not None:
                reply += " kept_pages=%d" % kept
            return reply

        def finish(self, reply, code=0):
            """Stop serving: the reply is printed once the mount is gone."""
            if self.exit_reply is None:
                self.exit_reply = reply
                self.exit_code = code
            if self.cancel_scope is not None:
                self.cancel_scope.cancel()

        def command(self, line):
            """Handle one control line; returns the reply or None when exiting."""
            words = line.split()
            if not words:
                return "error empty command"
            cmd, args = words[0], words[1:]
            try:
                if cmd == "cut" and not args:
                    self.finish("ok " + self.cut())
                    return None
                if cmd == "unmount" and not args:
                    self.finish("ok unmount (same as cut: volatile writes dropped) "
                                + self.cut())
                    return None
                if cmd == "cut-random" and len(args) == 1:
                    self.finish("ok " + self.cut(seed=int(args[0])))
                    return None
                if cmd == "fail-fsync" and len(args) == 1:
                    n = int(args[0])
                    if n < 0:
                        raise ValueError(n)
                    self.fail_fsync = n
                    return "ok"
                if cmd == "fail-writes" and len(args) == 3:
                    lo, hi = int(args[1]), int(args[2])
                    if lo < 0 or hi < lo:
                        raise ValueError((lo, hi))
                    self.write_faults.append((os.fsencode(args[0]), lo, hi))
                    return "ok"
                if cmd == "heal" and not args:
                    self.fail_fsync = 0
                    self.write_faults = []
                    return "ok"
                if cmd == "stats" and not args:
                    return self.stats_line()
            except ValueError:
                return "error bad arguments: " + line
            if cmd in ("cut", "unmount", "cut-random", "fail-fsync", "fail-writes",
                       "heal", "stats"):
                return "error bad arguments: " + line
            return "error unknown command: " + line

        async def control_loop(self):
            stream = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
            buf = b""
            try:
                while self.exit_reply is None:
                    data = await stream.receive_some(65536)
                    if not data:
                        reply = self.cut()
                        print("powercutfs: stdin closed: " + reply, file=sys.stderr, flush=True)
                        self.finish("ok " + reply)
                        return
                    buf += data
                    while b"\n" in buf and self.exit_reply is None:
                        raw, buf = buf.split(b"\n", 1)
                        line = raw.decode("utf-8", "replace").strip()
                        reply = self.command(line)
                        if reply is not None:
                            emit(reply)
            finally:
                with trio.CancelScope(shield=True):
                    await stream.aclose()

        async def signal_loop(self):
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as sigs:
                async for signum in sigs:
                    reply = self.cut()
                    print("powercutfs: %s: %s" % (signal.Signals(signum).name, reply),
                          file=sys.stderr, flush=True)
                    self.finish("ok " + reply)
                    return

        async def run(self):
            async with trio.open_nursery() as nursery:
                self.cancel_scope = nursery.cancel_scope
                nursery.start_soon(self.control_loop)
                nursery.start_soon(self.signal_loop)
                emit("mounted")
                await pyfuse3.main()
                # main() returned without being cancelled: unmounted from outside
                if self.exit_reply is None:
                    reply = self.cut()
                    print("powercutfs: unmounted from outside: " + reply,
                          file=sys.stderr, flush=True)
                    self.finish("error unmounted from outside; " + reply, 1)
                nursery.cancel_scope.cancel()

        # ------------------------------------------------------------ FUSE ops
        @_fuse_errors
        async def lookup(self, parent_inode, name, ctx=None):
            self._check_alive()
            if parent_inode != ROOT:
                raise FUSEError(errno.ENOENT)
            if name in (b".", b".."):
                return self._root_attr()
            node = self._node_for_name(name)
            attr = self._attr(node)
            node.lookups += 1
            return attr

        async def forget(self, inode_list):
            for ino, n in inode_list:
                node = self.nodes.get(ino)
                if node is not None:
                    node.lookups -= n
                    self._maybe_free(node)

        @_fuse_errors
        async def getattr(self, inode, ctx=None):
            self._check_alive()
            if inode == ROOT:
                return self._root_attr()
            return self._attr(self._node(inode))

        @_fuse_errors
        async def setattr(self, inode, attr, fields, fh, ctx):
            self._check_alive()
            if inode == ROOT:
                return self._root_attr()
            node = self._node(inode)
            if fields.update_size:
                self._truncate(node, attr.st_size)
                trace("setattr %s size=%d" % (node.name.decode(errors="replace"), attr.st_size))
            # metadata other than the size is applied at once (journaled)
            if fields.update_mode:
                os.fchmod(node.fd, stat.S_IMODE(attr.st_mode))
            if fields.update_uid or fields.update_gid:
                os.fchown(node.fd, attr.st_uid if fields.update_uid else -1,
                          attr.st_gid if fields.update_gid else -1)
            if fields.update_atime or fields.update_mtime:
                st = os.fstat(node.fd)
                atime = attr.st_atime_ns if fields.update_atime else st.st_atime_ns
                mtime = attr.st_mtime_ns if fields.update_mtime else node.mtime_ns
                os.utime(node.fd, ns=(atime, mtime))
                node.mtime_ns = mtime
            return self._attr(node)

        @_fuse_errors
        async def opendir(self, inode, ctx):
            self._check_alive()
            if inode != ROOT:
                raise FUSEError(errno.ENOTDIR)
            return 0

        @_fuse_errors
        async def readdir(self, fh, start_id, token):
            self._check_alive()
            names = sorted(set(os.listdir(self.backing)) | set(self.by_name))
            for i in range(start_id, len(names)):
                name = names[i]
                try:
                    node = self._node_for_name(name)
                except FUSEError:
                    continue  # not a regular file, or vanished
                if not pyfuse3.readdir_reply(token, name, self._attr(node), i + 1):
                    return
                node.lookups += 1

        async def releasedir(self, fh):
            pass

        @_fuse_errors
        async def fsyncdir(self, fh, datasync):
            self._check_alive()
            self._sync_dir()

        @_fuse_errors
        async def statfs(self, ctx):
            self._check_alive()
            sv = os.statvfs(self.backing)
            d = pyfuse3.StatvfsData()
            for f in ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail",
                      "f_files", "f_ffree", "f_favail", "f_namemax"):
                setattr(d, f, getattr(sv, f))
            return d

        def _new_handle(self, node, flags):
            fh = self.next_fh
            self.next_fh += 1
            self.handles[fh] = Handle(node, flags)
            node.opens += 1
            trace("open %s fh=%d flags=%s" % (node.name.decode(errors="replace"), fh,
                                             flag_names(flags)))
            fi = pyfuse3.FileInfo(fh=fh)
            fi.keep_cache = True  # all changes go through the kernel: its cache is right
            return fi

        @_fuse_errors
        async def open(self, inode, flags, ctx):
            self._check_alive()
            node = self._node(inode)
            if flags & os.O_TRUNC:
                self._truncate(node, 0)
            return self._new_handle(node, flags)

        @_fuse_errors
        async def create(self, parent_inode, name, mode, flags, ctx):
            self._check_alive()
            if parent_inode != ROOT:
                raise FUSEError(errno.EPERM)
            if name in self.by_name:
                node = self.by_name[name]
                if flags & os.O_EXCL:
                    raise FUSEError(errno.EEXIST)
            else:
                fd = os.open(self._path(name), os.O_CREAT | os.O_RDWR | os.O_CLOEXEC |
                             (flags & os.O_EXCL), stat.S_IMODE(mode))
                try:
                    if os.geteuid() == 0:
                        os.fchown(fd, ctx.uid, ctx.gid)
                finally:
                    os.close(fd)
                self._sync_dir()  # creation is metadata: journaled, durable at once
                node = self._node_for_name(name)
            if flags & os.O_TRUNC:
                self._truncate(node, 0)
            fi = self._new_handle(node, flags)
            attr = self._attr(node)
            node.lookups += 1
            return fi, attr

        @_fuse_errors
        async def read(self, fh, off, size):
            self._check_alive()
            node = self.handles[fh].node
            self.stats.reads += 1
            end = min(off + size, node.size)
            if off >= end:
                return b""
            self.stats.read_bytes += end - off
            if not node.dirty and not node.ghost:
                return self._backing_read(node, off, end - off)
            out = bytearray()
            run = None  # start offset of a pending run served from the backing file
            p = off // PAGE
            while p * PAGE < end:
                pstart = p * PAGE
                lo = max(off, pstart)
                hi = min(end, pstart + PAGE)
                pg = node.dirty.get(p)
                if pg is None:
                    pg = node.ghost.get(p)
                if pg is None:
                    if run is None:
                        run = lo
                else:
                    if run is not None:
                        out += self._backing_read(node, run, lo - run)
                        run = None
                    out += pg[lo - pstart:hi - pstart]
                p += 1
            if run is not None:
                out += self._backing_read(node, run, end - run)
            return bytes(out)

        @_fuse_errors
        async def write(self, fh, off, buf):
            self._check_alive()
            h = self.handles[fh]
            node = h.node
            end = off + len(buf)
            for name, lo, hi in self.write_faults:
                if name == node.name and off < hi and end > lo:
                    self.stats.failed_writes += 1
                    trace("write %s [%d,%d) -> injected EIO"
                          % (name.decode(errors="replace"), off, end))
                    raise FUSEError(errno.EIO)
            self.stats.writes += 1
            self.stats.bytes += len(buf)
            if h.sync:
                # durable when it returns: exactly these bytes go to the disk
                os.pwrite(node.fd, buf, off)
                os.fdatasync(node.fd)
                if end > node.disk_size:
                    node.disk_size = end
                self._patch_pages(node, off, buf, only_cached=True)
                self.stats.dsync_writes += 1
                h.implied_until = time.monotonic() + IMPLIED_SYNC_WINDOW
            else:
                self._patch_pages(node, off, buf, only_cached=False)
            if end > node.size:
                node.size = end
            return len(buf)

        @_fuse_errors
        async def flush(self, fh):
            self._check_alive()  # close() makes nothing durable

        async def release(self, fh):
            h = self.handles.pop(fh, None)
            if h is not None:
                h.node.opens -= 1
                self._maybe_free(h.node)

        @_fuse_errors
        async def fsync(self, fh, datasync):
            self._check_alive()
            h = self.handles[fh]
            node = h.node
            if h.sync and h.implied_until:
                # The kernel follows every write on an O_DSYNC/O_SYNC file with
                # an fsync of that file (generic_write_sync -> FUSE_FSYNC).  That
                # write already reached the disk; flushing the file's other dirty
                # pages here would be more durable than a real disk, so the first
                # fsync right after such a write is taken as that implied one.
                implied = time.monotonic() <= h.implied_until
                h.implied_until = 0.0
                if implied:
                    self.stats.implied_syncs += 1
                    trace("fsync %s datasync=%s implied by O_DSYNC write"
                          % (node.name.decode(errors="replace"), datasync))
                    return
            self.stats.fsyncs += 1
            trace("fsync %s datasync=%s dirty=%d"
                  % (node.name.decode(errors="replace"), datasync, len(node.dirty)))
            if self.fail_fsync > 0:
                # fsyncgate: writeback failed, the pages are marked clean and kept
                # in the page cache; the error is reported once.
                self.fail_fsync -= 1
                self.stats.failed_fsyncs += 1
                node.ghost.update(node.dirty)
                node.dirty.clear()
                raise FUSEError(errno.EIO)
            self._flush(node, datasync)

        @_fuse_errors
        async def unlink(self, parent_inode, name, ctx):
            self._check_alive()
            if parent_inode != ROOT:
                raise FUSEError(errno.ENOENT)
            node = self._node_for_name(name)
            os.unlink(self._path(name))
            self._sync_dir()
            node.linked = False
            del self.by_name[name]
            self._maybe_free(node)

        @_fuse_errors
        async def rename(self, parent_inode_old, name_old, parent_inode_new, name_new,
                         flags, ctx):
            self._check_alive()
            if parent_inode_old != ROOT or parent_inode_new != ROOT:
                raise FUSEError(errno.EXDEV)
            if flags & pyfuse3.RENAME_EXCHANGE:
                raise FUSEError(errno.EINVAL)
            node = self._node_for_name(name_old)
            if name_old == name_new:
                return
            try:
                target = self._node_for_name(name_new)
            except FUSEError:
                target = None
            if target is not None and flags & pyfuse3.RENAME_NOREPLACE:
                raise FUSEError(errno.EEXIST)
            os.rename(self._path(name_old), self._path(name_new))
            self._sync_dir()
            del self.by_name[name_old]
            if target is not None:
                target.linked = False
                del self.by_name[name_new]
                self._maybe_free(target)
            node.name = name_new
            self.by_name[name_new] = node

        async def mkdir(self, parent_inode, name, mode, ctx):
            raise FUSEError(errno.EPERM)

        async def mknod(self, parent_inode, name, mode, rdev, ctx):
            raise FUSEError(errno.EPERM)

        async def symlink(self, parent_inode, name, target, ctx):
            raise FUSEError(errno.EPERM)

        async def link(self, inode, new_parent_inode, new_name, ctx):
            raise FUSEError(errno.EPERM)

        async def rmdir(self, parent_inode, name, ctx):
            raise FUSEError(errno.ENOTDIR)

    return Ops


def emit(line):
    try:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    except (BrokenPipeError, OSError):
        pass


def force_unmount(mountpoint):
    for cmd in (["fusermount3", "-u", "-z", mountpoint], ["umount", "-l", mountpoint]):
        try:
            r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               timeout=10)
            if r.returncode == 0:
                return
            print("powercutfs: %s failed: %s" % (" ".join(cmd), r.stderr.decode().strip()),
                  file=sys.stderr, flush=True)
        except (OSError, subprocess.TimeoutExpired) as e:
            print("powercutfs: %s failed: %s" % (" ".join(cmd), e), file=sys.stderr, flush=True)


def main(argv):
    if len(argv) != 3 or not os.path.isdir(argv[1]) or not os.path.isdir(argv[2]):
        print(USAGE, file=sys.stderr, flush=True)
        return 2
    backing, mountpoint = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    _import_pyfuse3()
    import pyfuse3
    import trio

    if not os.path.exists("/dev/fuse"):
        print("powercutfs: /dev/fuse is missing; install fuse3 (%s) and, in a container, "
              "pass the device (--device /dev/fuse)" % INSTALL_HINT, file=sys.stderr, flush=True)
        return 3
    if os.path.ismount(mountpoint):
        print("powercutfs: %s is already a mount point" % mountpoint, file=sys.stderr, flush=True)
        return 3
    ops = make_ops_class()(backing)
    options = set(pyfuse3.default_options)
    options.add("fsname=powercutfs")
    options.discard("default_permissions")
    options.add("default_permissions")
    from shutil import which
    if which("fusermount3"):
        # a fusermount3 watchdog unmounts even if this process is SIGKILLed
        options.add("auto_unmount")
    try:
        pyfuse3.init(ops, mountpoint, options)
    except Exception as e:
        print("powercutfs: mounting %s failed: %s (needs /dev/fuse, fuse3: %s)"
              % (mountpoint, e, INSTALL_HINT), file=sys.stderr, flush=True)
        return 3
    code = 0
    try:
        trio.run(ops.run)
    except BaseException as e:  # noqa: B902 - must unmount whatever happened
        print("powercutfs: main loop failed: %r" % (e,), file=sys.stderr, flush=True)
        if ops.exit_reply is None:
            ops.cut()
            code = 1
    finally:
        ops.dead = True
        try:
            pyfuse3.close(unmount=True)
        except Exception as e:
            print("powercutfs: unmount failed: %s" % e, file=sys.stderr, flush=True)
        if os.path.ismount(mountpoint):
            print("powercutfs: %s still mounted; forcing lazy unmount" % mountpoint,
                  file=sys.stderr, flush=True)
            force_unmount(mountpoint)
    if ops.exit_reply is not None:
        emit(ops.exit_reply)
        code = code or ops.exit_code
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
