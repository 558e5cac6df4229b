#!/usr/bin/env bash
# new-app.sh KIND DIR — a new kiln app in DIR from the starter template starter/KIND (kilim: Kilim
# fibers; loom: JDK virtual threads). DIR must not exist, or be empty; its last path component names
# the app (its artifactId and jar). The app builds against kiln's installed artifacts: `make install`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage() { echo "usage: $0 kilim|loom DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
kind=$1 dir=$2
[ -d "$root/starter/$kind" ] || { echo "new-app: no starter '$kind'; choose kilim (fibers) or loom (virtual threads)" >&2; exit 2; }
if [ -e "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
  echo "new-app: $dir exists and is not empty; give a new directory" >&2; exit 2
fi
name=$(basename "$dir" | tr 'A-Z' 'a-z' | tr -c 'a-z0-9\n-' '-' | sed 's/^-*//; s/-*$//')
[ -n "$name" ] || { echo "new-app: cannot make an app name of '$dir'" >&2; exit 2; }
# kiln's version: the root pom's own <version>, the first one after its <artifactId>kiln-parent</artifactId>
version=$(sed -n '/<artifactId>kiln-parent<\/artifactId>/{n;s/.*<version>\(.*\)<\/version>.*/\1/p;q}' "$root/pom.xml")
[ -n "$version" ] || { echo "new-app: cannot read kiln's version from $root/pom.xml" >&2; exit 1; }
mkdir -p "$dir"
cp -R "$root/starter/$kind/." "$dir/"
# the app's own copies: kiln's JVM flags (make run starts java with them) and the JDK lookup
cp "$root/deploy/jvm.options" "$dir/jvm.options"
cp "$root/scripts/find-java.sh" "$dir/find-java.sh"
find "$dir" -type f -exec sed -i "s/__NAME__/$name/g; s/__KILN_VERSION__/$version/g" {} +
repo=${MAVEN_REPO_LOCAL:-$HOME/.m2/repository}
echo "new-app: created $dir ($name, kiln $version, $kind)"
if [ ! -d "$repo/dev/kiln/kiln-http-$kind/$version" ]; then
  echo "new-app: kiln $version is not in $repo yet: run 'make install' in $root first"
fi
echo "next: cd $dir && make run        then: curl http://127.0.0.1:8080/hello"
