#!/usr/bin/env bash
# The tests of ab-sweep.sh, its anchors and its report, in one entry point (`make test`, .ci/run).
# Installs nothing: it needs what is listed in check_prerequisites, and fails naming what is missing.
# Runs a real quick sweep (dummy, nginx, kilim; about a minute of load on loopback) and opens its
# HTML report in headless Chromium. Ends with "N passed, N failed"; exits non-zero on any failure.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
VENV_PY=sweep/.venv/bin/python
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kiln-sweep-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
PASSED=0 FAILED=0

# check NAME COMMAND...: runs one test; its output is shown only when it fails.
check() {
  local name=$1 out
  shift
  if out=$("$@" 2>&1); then
    PASSED=$((PASSED + 1))
    echo "ok   - $name"
  else
    FAILED=$((FAILED + 1))
    echo "FAIL - $name"
    tail -n 60 <<<"$out" | sed 's/^/       /'
  fi
}

fail() {
  echo "$*"
  return 1
}

check_prerequisites() {
  local missing=() tool
  for tool in shellcheck ab nginx java javac chromium taskset ss pgrep python3; do
    command -v "$tool" >/dev/null || missing+=("$tool")
  done
  ((${#missing[@]} == 0)) || fail "missing: ${missing[*]} (apt-get install -y shellcheck apache2-utils nginx-light chromium openjdk-17-jdk-headless util-linux iproute2 procps python3-venv)"
  [[ -x $VENV_PY ]] || fail "no $VENV_PY: run ./ab-sweep.sh --setup (installs sweep/requirements.txt into sweep/.venv)"
}

# --- static checks -------------------------------------------------------------------------------
test_shellcheck() {
  shellcheck -x ab-sweep.sh sweep/lib.sh sweep/servers.sh sweep/test.sh
}

# --- file-limit capping, with fake limits ----------------------------------------------------------
expect_eq() { # WHAT GOT WANT
  [[ $2 == "$3" ]] || fail "$1: got '$2', want '$3'"
}

test_cap_logic() (
  # shellcheck source=sweep/lib.sh
  source sweep/lib.sh
  local tab=$'\t'
  expect_eq "limit 20000, c=20000" "$(sweep_cap 20000 20000 ab)" "19500${tab}open-files limit 20000" || return 1
  expect_eq "limit 20000, c=15000" "$(sweep_cap 20000 15000 ab)" "15000${tab}" || return 1
  expect_eq "VPS limit 102400, c=20000" "$(sweep_cap 102400 20000 ab)" "20000${tab}" || return 1
  expect_eq "ab's own maximum" "$(sweep_cap 102400 25000 ab)" "20000${tab}ab's maximum concurrency 20000" || return 1
  expect_eq "wrk has no such maximum" "$(sweep_cap 102400 25000 wrk)" "25000${tab}" || return 1
  expect_eq "unlimited" "$(sweep_cap unlimited 20000 ab)" "20000${tab}" || return 1
  expect_eq "limit 1024" "$(sweep_cap 1024 1000 ab)" "524${tab}open-files limit 1024" || return 1
  expect_eq "limit below the spare" "$(sweep_cap 400 10 ab)" "0${tab}open-files limit 400" || return 1
  expect_eq "label of a capped step" "$(sweep_step_label 20000 19500 "open-files limit 20000")" \
    "requested 20000, ran 19500: open-files limit 20000" || return 1
  expect_eq "label of a full step" "$(sweep_step_label 1000 1000 "")" "1000" || return 1
  # Steps that cap to the same concurrency run once; the others are reported, not silently lost.
  local plan notes
  plan=$(sweep_plan 5000 ab 1000 2000 5000 10000 15000 20000 2>"$WORK/plan.err")
  notes=$(<"$WORK/plan.err")
  expect_eq "plan at limit 5000" "$plan" "1000${tab}1000${tab}
2000${tab}2000${tab}
5000${tab}4500${tab}open-files limit 5000" || return 1
  [[ $notes == *"skipping concurrency 10000: capped to 4500"*"skipping concurrency 20000"* ]] ||
    fail "skipped steps not reported: $notes"
)

test_timed_load_sizing() (
  source sweep/lib.sh
  local tab=$'\t'
  # 25 requests per connection at least; otherwise the warm-up's rate for DURATION seconds.
  expect_eq "slow server, many connections" "$(sweep_timed_load 19500 10000 10)" "487500${tab}30" || return 1
  expect_eq "fast server" "$(sweep_timed_load 1000 40000.5 10)" "400000${tab}30" || return 1
  expect_eq "warm-up gave no rate" "$(sweep_timed_load 100 - 10)" "2500${tab}30" || return 1
  expect_eq "wrk duration bounded by 3x" "$(sweep_wrk_duration 487500 10000 10)" "30" || return 1
  expect_eq "wrk duration at least 1x" "$(sweep_wrk_duration 1000 40000 10)" "10" || return 1
)

test_times_parsing() (
  source sweep/lib.sh
  printf '0m0.010s 0m0.020s\n1m2.345s 0m10.500s\n' >"$WORK/times"
  expect_eq "children CPU from bash's times" "$(sweep_times_children_ms "$WORK/times")" "62345 10500"
)

# --- the command line --------------------------------------------------------------------------------
test_help_and_bad_usage() {
  local out rc
  out=$(./ab-sweep.sh --help) || fail "--help exited $?" || return 1
  for opt in --path --quick --latency --client --no-pin --heap --plan-only --no-anchors; do
    [[ $out == *"$opt"* ]] || fail "--help does not document $opt" || return 1
  done
  ./ab-sweep.sh --bogus >/dev/null 2>&1
  rc=$?
  expect_eq "exit status of an unknown option" "$rc" 2 || return 1
  ./ab-sweep.sh nosuchserver >/dev/null 2>&1
  rc=$?
  expect_eq "exit status of an unknown server" "$rc" 2 || return 1
  ./ab-sweep.sh kilim --client curl >/dev/null 2>&1
  rc=$?
  expect_eq "exit status of a bad --client" "$rc" 2
}

test_plan_only_caps_under_a_real_lower_limit() {
  local out
  # A real limit, lowered in a subshell (soft and hard), not a fake one: the script must detect it.
  out=$(ulimit -n 5000 && ./ab-sweep.sh kilim --plan-only) || fail "--plan-only failed: $out" || return 1
  [[ $out == *"c=requested 5000, ran 4500: open-files limit 5000"* ]] || fail "no capped step in: $out" || return 1
  [[ $out == *"c=1000"* && $out == *"c=2000"* ]] || fail "uncapped steps missing in: $out" || return 1
  [[ $out == *"ulimit -n 102400"* && $out == *"LimitNOFILE"* && $out == *"limits.conf"* ]] ||
    fail "no advice on raising the limit in: $out" || return 1
  [[ $out != *"c=20000"* ]] || fail "a capped step is labelled with the requested number: $out"
}

# --- the Python parts ---------------------------------------------------------------------------------
test_report_unit() {
  (cd sweep && "../$VENV_PY" -m unittest test_report)
}

test_dummy_wire() {
  (cd sweep && "../$VENV_PY" -m unittest test_dummy)
}

# --- a real quick sweep --------------------------------------------------------------------------------
QUICK=$WORK/quick
test_quick_sweep_runs() {
  ./ab-sweep.sh kilim --quick --no-install --out "$QUICK"
}

test_quick_sweep_outputs_hold_the_measured_numbers() {
  local f
  for f in runs.tsv runs.csv summary.csv summary.json chart.png chart.svg report.html; do
    [[ -s $QUICK/$f ]] || fail "$f missing or empty in $QUICK" || return 1
  done
  "$VENV_PY" - "$QUICK" <<'EOF'
import csv, json, re, sys
from pathlib import Path
d = Path(sys.argv[1])
runs = list(csv.DictReader(open(d / "runs.csv")))
doc = json.loads((d / "summary.json").read_text())
html = (d / "report.html").read_text()
servers = {(r["server"], r["concurrency"]) for r in runs}
want = {(s, c) for s in ("dummy", "nginx", "kilim") for c in ("10", "100")}
assert servers == want, f"runs.csv holds {sorted(servers)}, want {sorted(want)}"
for r in runs:
    # The CSV's req/s is what ab printed in the raw output it names.
    raw = (d / r["raw"]).read_text()
    ab_rps = float(re.search(r"Requests per second:\s+([\d.]+)", raw).group(1))
    assert abs(float(r["rps"]) - ab_rps) < 0.01, (r["raw"], r["rps"], ab_rps)
    assert r["ok"] == "yes" and int(r["failures"]) == 0, r
    assert float(r["server_cpu_us_per_request"]) > 0 and float(r["rss_peak_mb"]) > 0, r
assert {r["server"] for r in doc["summary"]} == {"dummy", "nginx", "kilim"}
for s in doc["summary"]:
    median = s["rps_median"]
    assert median and median > 0, s
    # the HTML table shows the same median, formatted as in the terminal table
    assert f"<td>{median:,.0f}</td>" in html, f"{s['server']} c={s['concurrency']}: {median:,.0f} not in report.html"
    if s["server"] == "kilim":
        assert s["rps_vs_dummy"] and s["rps_vs_nginx"] and s["cpu_vs_dummy"], s
summary_csv = list(csv.DictReader(open(d / "summary.csv")))
assert len(summary_csv) == 6, summary_csv
# Self-contained: plotly.js inlined, nothing loaded from elsewhere.
assert "Plotly.newPlot" in html, "no plotly charts"
assert not re.search(r"<script[^>]*\bsrc=|<link[^>]*\bhref=[\"']?https?:", html), "report loads files from elsewhere"
EOF
}

test_chart_png_is_a_chart() {
  "$VENV_PY" - "$QUICK/chart.png" <<'EOF'
import sys
from PIL import Image
img = Image.open(sys.argv[1]).convert("RGB")
w, h = img.size
assert w >= 800 and h >= 600, img.size
colors = img.getcolors(maxcolors=1 << 20)
assert len(colors) > 50, f"only {len(colors)} colours: blank?"
non_white = sum(n for n, c in colors if sum(c) < 720)
assert non_white / (w * h) > 0.02, f"{non_white / (w * h):.3%} non-white pixels: blank?"
EOF
}

test_unanswered_path_fails_clearly() {
  local out rc
  # --no-build: the quick sweep above already built the jar if it had to.
  out=$(./ab-sweep.sh kilim --quick --no-anchors --no-install --no-build --path /no-such-endpoint --out "$WORK/badpath" 2>&1)
  rc=$?
  expect_eq "exit status" "$rc" 1 || return 1
  [[ $out == *"kilim answered GET /no-such-endpoint with '404', not 2xx"* && $out == *"no step was measured"* ]] ||
    fail "unclear failure: $out"
}

# The report as a person sees it: headless Chromium, flags per the machine notes (no network).
CHROMIUM_FLAGS=(--headless --no-sandbox --disable-gpu --disable-quic --disable-background-networking
  --no-first-run --disable-component-update --disable-sync --enable-logging=stderr --v=0)

test_html_report_renders_in_chromium() {
  local dom
  timeout 120 chromium "${CHROMIUM_FLAGS[@]}" --user-data-dir="$WORK/chromium-dom" --virtual-time-budget=10000 \
    --dump-dom "file://$QUICK/report.html" >"$WORK/dom.html" 2>"$WORK/dom.err" ||
    fail "chromium --dump-dom failed: $(tail -n 5 "$WORK/dom.err")" || return 1
  dom=$(<"$WORK/dom.html")
  [[ $dom == *'data-render="ok"'* ]] || fail "page did not mark its charts rendered: $(grep -o 'id="render-status"[^<]*' "$WORK/dom.html")" || return 1
  (($(grep -o 'class="main-svg"' "$WORK/dom.html" | wc -l) >= 4)) || fail "fewer than 4 plotly SVG layers in the DOM" || return 1
  # Console messages (script errors included) reach stderr as INFO:CONSOLE lines.
  ! grep -E ':CONSOLE' "$WORK/dom.err" || fail "console messages above" || return 1
  timeout 120 chromium "${CHROMIUM_FLAGS[@]}" --user-data-dir="$WORK/chromium-shot" --virtual-time-budget=10000 \
    --window-size=1280,1600 --screenshot="$WORK/report.png" "file://$QUICK/report.html" >/dev/null 2>"$WORK/shot.err" ||
    fail "chromium --screenshot failed: $(tail -n 5 "$WORK/shot.err")" || return 1
  "$VENV_PY" - "$WORK/report.png" <<'EOF'
import sys
from PIL import Image
img = Image.open(sys.argv[1]).convert("RGB")
w, h = img.size
# The first chart sits below the title: its plot area is plotly's light blue-grey (#E5ECF6) and
# its lines are saturated colours. A blank or unstyled page has neither.
top = img.crop((0, 0, w, min(h, 900)))
colors = top.getcolors(maxcolors=1 << 20)
plot_bg = sum(n for n, c in colors if c == (229, 236, 246))
saturated = sum(n for n, c in colors if max(c) - min(c) > 100)
assert plot_bg > 50000, f"only {plot_bg} plot-background pixels: chart not drawn"
assert saturated > 500, f"only {saturated} saturated pixels: no lines drawn"
assert len(colors) > 100, f"only {len(colors)} colours"
EOF
}

echo "ab-sweep tests (results of the quick sweep in $WORK while running)"
check "prerequisites installed" check_prerequisites
check "shellcheck passes" test_shellcheck
check "file-limit capping (fake limits)" test_cap_logic
check "timed step sizing" test_timed_load_sizing
check "client CPU from bash's times" test_times_parsing
check "--help, bad usage exits 2" test_help_and_bad_usage
check "--plan-only caps under ulimit -n 5000" test_plan_only_caps_under_a_real_lower_limit
check "report.py unit tests" test_report_unit
check "dummy anchor on the wire" test_dummy_wire
check "./ab-sweep.sh kilim --quick" test_quick_sweep_runs
check "CSV, JSON, PNG, HTML hold the measured numbers" test_quick_sweep_outputs_hold_the_measured_numbers
check "chart.png is a drawn chart" test_chart_png_is_a_chart
check "report.html renders in headless Chromium" test_html_report_renders_in_chromium
check "a path the server does not serve fails clearly" test_unanswered_path_fails_clearly
echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
