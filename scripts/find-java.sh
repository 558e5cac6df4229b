#!/usr/bin/env bash
# find-java.sh RANGE: prints the path of a `java` that runs a front end needing RANGE, as
# frontends.conf writes it: 17 (17 only), 17+ (17 or newer), 21+ (21 or newer).
# Tries $JAVA (default: java on the PATH) first, then the JDKs under /usr/lib/jvm (or $KILN_JVM_DIR,
# for tests) in name order.
# Exit 1 with a line naming what to install when none fits; exit 2 on a bad RANGE.
set -euo pipefail

range=${1:-}
if [[ $range =~ ^([0-9]+)\+$ ]]; then
  min=${BASH_REMATCH[1]} max=999
elif [[ $range =~ ^[0-9]+$ ]]; then
  min=$range max=$range
else
  echo "usage: find-java.sh 17|17+|21+ (got '$range')" >&2
  exit 2
fi

# feature JAVA: the feature version (17, 21, 25...) of a java binary, from its JDK's release file
# when there is one (cheap), else from `java -version`.
feature() {
  local java=$1 home line
  home=$(dirname "$(dirname "$(readlink -f "$java")")")
  if [[ -f $home/release ]]; then
    line=$(sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$home/release")
  else
    line=$("$java" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p')
  fi
  [[ $line == 1 ]] && line=8 # "1.8.0_..."
  echo "${line:-0}"
}

fits() {
  local v
  v=$(feature "$1")
  ((v >= min && v <= max))
}

candidate=$(command -v "${JAVA:-java}" 2>/dev/null || true)
if [[ -n $candidate ]] && fits "$candidate"; then
  echo "$candidate"
  exit 0
fi
jvm_dir=${KILN_JVM_DIR:-/usr/lib/jvm}
for java in "$jvm_dir"/*/bin/java; do
  [[ -x $java ]] || continue
  if fits "$java"; then
    echo "$java"
    exit 0
  fi
done
if ((max == min)); then want="JDK $min"; else want="JDK $min or newer"; fi
if ((min >= 21)); then
  # Debian 12 packages no JDK 21 or newer; Debian 13 and Ubuntu 24.04 do.
  how="Debian 13 / Ubuntu 24.04: openjdk-$min-jdk-headless; Debian 12: Temurin $min+ from Adoptium's apt repository"
else
  how="Debian/Ubuntu: openjdk-$min-jdk-headless"
fi
echo "find-java.sh: no $want in \$JAVA or $jvm_dir; install one ($how) or set JAVA=/path/to/bin/java" >&2
exit 1
