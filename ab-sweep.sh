#!/usr/bin/env bash
# ab-sweep.sh — the keep-alive concurrency sweep: how each kiln front end (frontends.conf) holds up
# under 1000 to 20000 keep-alive connections, beside three anchors measured in the same rounds (a
# minimal Java NIO server, nginx and Netty). Run `./ab-sweep.sh --help`. Method and traps:
# ../shared/FACTS.md, "Benchmarking on this machine"; the README's "Benchmark sweep" section
# explains the report.
#
# The sweep is the Python package sweep/kiln_sweep/ and runs on the system python3 alone (standard
# library); only the charts and the tests use the venv that --setup creates in sweep/.venv.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if ! command -v python3 >/dev/null; then
  echo "ab-sweep: python3 not found: apt-get install -y python3 python3-venv" >&2
  exit 1
fi
export PYTHONPATH="$root/sweep${PYTHONPATH:+:$PYTHONPATH}"
exec python3 -m kiln_sweep "$@"
