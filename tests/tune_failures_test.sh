#!/usr/bin/env bash
# tune_failures_test.sh: `temper tune` on PoCL says why configurations failed: a candidate whose
# args(...) names an unknown argument (invalid) and one that does not compile each fail every
# configuration; the progress lines carry the verdict's message (a compile error's first compiler
# error), the summary lists each distinct failure with its count (and the compiler log's first
# lines), and --json has the same under "failures".
# usage: tune_failures_test.sh TEMPER_BINARY SOURCE_DIR
set -u
temper=$1
src=$2
work=$(mktemp -d /tmp/temper-tunefail-XXXXXX)
export TEMPER_HOME=$work/home TEMPER_CACHE=$work/cache TEMPER_TASKS=$src/tasks
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }
show() { sed 's/^/     /' "$@" | tail -12; }

sed 's/args(c, a, b, N)/args(c, a, bta, N)/; s/block(256)/block(BS)/; s/ceil_div(N, 256)/ceil_div(N, BS)/' \
    "$src/tasks/L1/vector_add/naive.cl" | sed '2a // @temper param BS 64 128' >"$work/m1.cl"
sed 's/block(256)/block(BS)/; s/ceil_div(N, 256)/ceil_div(N, BS)/; s/a\[i\] + b\[i\]/a[i] + b[i] + undefined_thing/' \
    "$src/tasks/L1/vector_add/naive.cl" | sed '2a // @temper param BS 64 128' >"$work/ce.cl"
grep -q bta "$work/m1.cl" && grep -q undefined_thing "$work/ce.cl" || { echo "FAIL the candidates were not made"; exit 1; }

# 1. An unknown argument in args(...): every configuration invalid, each saying why.
"$temper" tune "$work/m1.cl" --budget 3 --no-compiler-knobs >"$work/m1.out" 2>"$work/m1.err"
status=$?
[ $status -eq 1 ] && ok "nothing passed: exit 1" || { fail "exit $status"; show "$work/m1.err"; }
lines=$(grep -c "^tune   [0-9] BS=[0-9]*: invalid (.*m1.cl:[0-9]*: args(...) names 'bta'.*); best none yet$" "$work/m1.err")
[ "$lines" = 2 ] && ok "each progress line says why the configuration is invalid" ||
    { fail "progress lines ($lines say why)"; show "$work/m1.err"; }
too_long=$(awk 'length($0) > 159' "$work/m1.err" | wc -l)
[ "$too_long" = 0 ] && grep -q '\.\.\.); best none yet$' "$work/m1.err" &&
    ok "a long message is cut to fit 160 columns, ending in ..." || { fail "progress line widths"; show "$work/m1.err"; }
grep -q "^failed     invalid (2 configurations, first BS=64): .*m1.cl:[0-9]*: args(...) names 'bta', which is not an argument of task vector_add" "$work/m1.out" &&
    ok "the summary gives the failure's whole message and count" || { fail "summary"; show "$work/m1.out"; }

# 2. A compile error: the progress lines name the compiler's error, the summary its log.
"$temper" tune "$work/ce.cl" --budget 2 --no-compiler-knobs >"$work/ce.out" 2>"$work/ce.err"
status=$?
[ $status -eq 1 ] && ok "a compile error everywhere: exit 1" || { fail "exit $status"; show "$work/ce.err"; }
lines=$(grep -c "^tune   [0-9] BS=[0-9]*: compile_error (.*ce.cl:[0-9]*:[0-9]*: .*undefined_thing.*); best none yet$" "$work/ce.err")
[ "$lines" = 2 ] && ok "each progress line names the compiler's error" || { fail "progress lines ($lines)"; show "$work/ce.err"; }
grep -q "^failed     compile_error (2 configurations, first BS=64): .*ce.cl: " "$work/ce.out" &&
    grep -A1 "^           compiler log (first lines):" "$work/ce.out" | grep -q "^             .*ce.cl:[0-9]*:[0-9]*: .*undefined_thing" &&
    ok "the summary gives the compile error with the compiler log's first lines" || { fail "summary"; show "$work/ce.out"; }

# 3. --json: the same under "failures" (taken from the store this time, as they were evaluated).
"$temper" tune "$work/ce.cl" --budget 2 --no-compiler-knobs --json >"$work/ce.json" 2>/dev/null
python3 - "$work/ce.json" <<'PY' && ok "--json lists the failure with its count, message, config and compiler log" ||
import json, sys
s = json.load(open(sys.argv[1]))
f = s["failures"]
sys.exit(0 if s["from_store"] == 2 and len(f) == 1 and f[0]["verdict"] == "compile_error" and f[0]["count"] == 2
         and f[0]["first_at"] == 1 and f[0]["config"] == "BS=64" and "ce.cl" in f[0]["message"]
         and "undefined_thing" in f[0]["compile_log"] else 1)
PY
    { fail "--json failures"; show "$work/ce.json"; }
"$temper" tune "$work/m1.cl" --budget 2 --no-compiler-knobs --json >"$work/m1.json" 2>/dev/null
python3 - "$work/m1.json" <<'PY' && ok "--json lists an invalid configuration's message, with no compiler log" ||
import json, sys
f = json.load(open(sys.argv[1]))["failures"]
sys.exit(0 if len(f) == 1 and f[0]["verdict"] == "invalid" and f[0]["count"] == 2 and "names 'bta'" in f[0]["message"]
         and f[0]["compile_log"] is None else 1)
PY
    { fail "--json failures"; show "$work/m1.json"; }

# 4. A tune that finds a best does not print failures, and its --json has none.
"$temper" tune "$src/tasks/L1/vector_add/naive.cl" --budget 1 --no-compiler-knobs --screen-budget 0.05 \
    --full-budget 0.05 --retime 1 --json >"$work/ok.json" 2>/dev/null
python3 -c "import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if s['best'] and s['failures'] == [] else 1)" \
    "$work/ok.json" && ok "a tune with a best has no failures" || { fail "failures of a good tune"; show "$work/ok.json"; }

rm -rf "$work"
echo "$failures failures"
[ "$failures" -eq 0 ]
