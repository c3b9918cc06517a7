#!/bin/sh
# result_schema_test.sh TEMPER RESULT_SCHEMA_TEST SOURCE_DIR: the result record against its
# documentation. docs/result.md's field tables must be the generated ones, and a real result of
# every verdict (correct and timed, incorrect, compile_error, runtime_error, timeout, invalid),
# made on the OpenCL device, must validate: every documented key, nothing else, each of its type.
set -u
temper=$1 check=$2 src=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TEMPER_HOME=$tmp/home TEMPER_CACHE=$tmp/cache
"$check" --docs "$src/docs/result.md" || exit 1
if ! "$temper" devices --json 2>/dev/null | grep -q '"id": "opencl:'; then
    echo "SKIP no OpenCL device (PoCL) to make results on"
    exit 77
fi
cases=$src/tests/cases/opencl
eval_json() { # OUT ARGS...: temper eval --json ARGS > OUT; the exit status must be 0 or 1
    out=$1
    shift
    "$temper" eval --json --tasks "$src/tasks" --time-budget 0.2 "$@" >"$out" 2>"$out.err"
    rc=$?
    if [ $rc -gt 1 ]; then
        echo "FAIL temper eval $* exited $rc: $(cat "$out.err")"
        exit 1
    fi
}
eval_json "$tmp/correct.json" "$src/tasks/L1/vector_add/naive.cl"
eval_json "$tmp/incorrect.json" "$cases/partial_write.cl"
eval_json "$tmp/compile_error.json" "$cases/compile_error.cl"
eval_json "$tmp/runtime_error.json" "$cases/runtime_crash.cl"
eval_json "$tmp/timeout.json" --launch-timeout 1 "$cases/hang.cl"
eval_json "$tmp/invalid.json" "$cases/malformed_directive.cl"
# Several candidates in one run print one result a line, in the same form.
eval_json "$tmp/batch.json" --no-timing "$cases/partial_write.cl" "$src/tasks/L1/vector_add/naive.cl"
"$check" --expect correct "$tmp/correct.json" --expect incorrect "$tmp/incorrect.json" \
    --expect compile_error "$tmp/compile_error.json" --expect runtime_error "$tmp/runtime_error.json" \
    --expect timeout "$tmp/timeout.json" --expect invalid "$tmp/invalid.json" "$tmp/batch.json" || exit 1
# partial_write.cl leaves an element unwritten (NaN): the first wrong element is still reported,
# its value as text (JSON has no NaN; it was null before got_text).
python3 - "$tmp/incorrect.json" <<'PY' || exit 1
import json, sys
firsts = [c.get("first_mismatch") for c in json.load(open(sys.argv[1]))["checks"] if not c.get("passed")]
if not firsts or not firsts[0] or firsts[0].get("got_text") != "nan" or firsts[0].get("got") is not None:
    sys.exit("FAIL the NaN element is not the first mismatch: %s" % (firsts[:1],))
# Its one unwritten element is counted as not finite, out of every element of the shape (N).
bad = [c for c in json.load(open(sys.argv[1]))["checks"] if not c.get("passed")][0]
n = int(bad["shape"].split("=")[1])
if bad.get("nonfinite") != 1 or bad.get("elements") != n:
    sys.exit("FAIL nonfinite %s, elements %s at %s (want 1 of %d)" % (bad.get("nonfinite"), bad.get("elements"), bad["shape"], n))
PY
# The human table says so beside the errors (which are over the finite outputs only).
"$temper" eval --tasks "$src/tasks" --no-timing "$cases/partial_write.cl" >"$tmp/incorrect.txt" 2>&1
grep -Eq "FAIL .* 1 of [0-9]+ outputs NaN or inf" "$tmp/incorrect.txt" ||
    { echo "FAIL the human table does not count the NaN output:"; cat "$tmp/incorrect.txt"; exit 1; }
# The correct result was timed: its timing record is filled, not all null.
grep -q '"median_ms": [0-9]' "$tmp/correct.json" || { echo "FAIL the correct result has no median_ms"; exit 1; }
echo "result schema: docs and every verdict's result agree"
