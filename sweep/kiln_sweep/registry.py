"""The servers the sweep knows: kiln's front ends, read from frontends.conf at the repository root (the
one list the Makefile and the conformance suite read too), the three anchors measured beside them, and
Vert.x, an anchor measured when named."""

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from kiln_sweep import SweepError

# Measured in the same rounds as the front ends: the floor a Java server reaches here (a minimal NIO
# server, sweep/DummyServer.java), nginx with one worker, and the JVM's own front-runner, Netty as
# TechEmpower's entry runs it (bench-netty/). Why each is a fair anchor:
# docs/benchmarks/2026-11-28-anchors.md.
ANCHORS = ("dummy", "nginx", "netty")
# What the JVM anchors netty and vertx serve; for another --path netty is left out (nginx and the dummy
# answer every path with /hello's bytes).
ANCHOR_PATHS = ("/hello", "/plaintext", "/json")


@dataclass(frozen=True)
class Server:
    """One server the sweep can start.

    kind is "jar" (a kiln front end), "anchor" (a Java anchor built by Maven: netty, vertx), "dummy" or "nginx";
    module/jar are the Maven module and its runnable jar relative to the repository root; jdk is
    frontends.conf's range ("17", "17+", "21+"; "" for nginx); args go after the contract's
    --port/--bind/--data (an anchor gets --port/--bind only). An anchor has its own JVM flags
    (jvm_options, a Java argument file relative to the root; under --vps it gets kiln's) and may serve
    only some paths (paths; empty: every path)."""
    name: str
    kind: str
    module: str = ""
    jar: str = ""
    jdk: str = ""
    args: tuple = ()
    jvm_options: str = ""
    paths: tuple = ()

    @property
    def runs_on_java(self):
        return self.kind != "nginx"


def read_frontends(path):
    """frontends.conf's front ends, in file order. Columns: name module jar jdk connection deviations
    args...; '#' starts a comment line. Raises SweepError naming the line when one is short."""
    servers = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        cols = line.split()
        if not cols or cols[0].startswith("#"):
            continue
        if len(cols) < 6:
            raise SweepError(f"{path}:{number}: want name module jar jdk connection deviations [args], got {line!r}")
        name, module, jar, jdk = cols[:4]
        servers.append(Server(name, "jar", module, f"{module}/target/{jar}", jdk, tuple(cols[6:])))
    return servers


def known(root):
    """Every server by name: the front ends of frontends.conf, then the anchors."""
    servers = {s.name: s for s in read_frontends(Path(root) / "frontends.conf")}
    servers["dummy"] = Server("dummy", "dummy", jdk="17+")
    servers["nginx"] = Server("nginx", "nginx")
    servers["netty"] = Server("netty", "anchor", "bench-netty", "bench-netty/target/netty-anchor.jar", "17+",
                              jvm_options="bench-netty/jvm.options", paths=ANCHOR_PATHS)
    # Measured only when named (./ab-sweep.sh kilim vertx): no ratio columns of its own.
    servers["vertx"] = Server("vertx", "anchor", "bench-vertx", "bench-vertx/target/vertx-anchor.jar", "17+",
                              jvm_options="bench-vertx/jvm.options", paths=ANCHOR_PATHS)
    return servers


def present(root, server):
    """True when `server` can run from this checkout: one that no module builds, or whose module exists."""
    return not server.module or (Path(root) / server.module / "pom.xml").is_file()


def serves(server, path):
    """True when `server` answers GET `path` (netty and vertx serve ANCHOR_PATHS only)."""
    return not server.paths or path in server.paths


def _pom(path):
    return ET.parse(path).getroot()


def source_dirs(root, module):
    """The module and every module of this repository it depends on, directly or not (from the poms):
    the directories whose sources its jar is built from. A build plugin built here counts too (the
    Kilim weaver that weaves http-kilim and db): a change to it changes the woven classes."""
    root = Path(root)
    by_artifact = {}
    for m in _pom(root / "pom.xml").iterfind(".//{*}modules/{*}module"):
        pom = root / m.text / "pom.xml"
        if pom.is_file():
            by_artifact[_pom(pom).findtext("{*}artifactId")] = m.text
    found, todo = [], [module]
    while todo:
        m = todo.pop()
        if m in found:
            continue
        found.append(m)
        pom = _pom(root / m / "pom.xml")
        used = [d for d in pom.iterfind("{*}dependencies/{*}dependency") if d.findtext("{*}scope") != "test"]
        used += pom.iterfind("{*}build/{*}plugins/{*}plugin")
        todo += [by_artifact[a] for a in (u.findtext("{*}artifactId") for u in used) if a in by_artifact]
    return found


def jar_outdated(root, server):
    """True when the server's jar is missing, or a main source or pom it is built from (its module, the
    modules it depends on and the root pom; tests do not count) is newer than the jar."""
    root = Path(root)
    jar = root / server.jar
    if not jar.is_file():
        return True
    built = jar.stat().st_mtime
    if (root / "pom.xml").stat().st_mtime > built:
        return True
    for m in source_dirs(root, server.module):
        if (root / m / "pom.xml").stat().st_mtime > built:
            return True
        for f in (root / m / "src" / "main").rglob("*"):
            if f.is_file() and f.stat().st_mtime > built:
                return True
    return False
