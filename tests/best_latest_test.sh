#!/usr/bin/env bash
# best_latest_test.sh: `temper best`, `temper knowledge search` and `temper report --task` serve a
# configuration only while its latest evaluation is correct. A real vector_add OpenCL candidate
# that is wrong only on the one-element input of public seed 1 (its sum, read from a kernel wrong
# at N = 1, so that the test follows the input generator) is correct with another seed and
# incorrect with seed 1, whatever the secret seed: once correct, then found wrong by a later run,
# it is no best kernel; correct again, it is.
# usage: best_latest_test.sh TEMPER_BINARY SOURCE_DIR
set -u
temper=$1
src=$2
work=$(mktemp -d /tmp/temper-best-latest-XXXXXX)
trap 'rm -rf "$work"' EXIT
export TEMPER_HOME=$work/home TEMPER_CACHE=$work/cache TEMPER_TASKS=$src/tasks TEMPER_KNOWLEDGE=$src/knowledge
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }

kernel() { # kernel CONDITION: vector_add, one too many where CONDITION holds
    cat <<CL
// vector_add, wrong (one too many) where: $1
// @temper task vector_add
// @temper launch vector_add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
__kernel void vector_add(__global float *c, __global const float *a, __global const float *b, int N)
{
    int i = get_global_id(0);
    if (i < N)
        c[i] = a[i] + b[i] + (($1) ? 1.0f : 0.0f);
}
CL
}
kernel "N == 1" >"$work/always.cl"
"$temper" eval "$work/always.cl" --seed 1 --no-timing --no-store >"$work/always.out" 2>&1
sum=$(sed -n 's/.*N=1, public seed: .*expected \([-0-9.e+]*\) .*/\1/p' "$work/always.out")
[ -n "$sum" ] && ok "seed 1's a[0] + b[0] at N = 1 is $sum" || { fail "no sum: $(cat "$work/always.out")"; exit 1; }
kernel "N == 1 && fabs(a[0] + b[0] - ${sum}f) < 1e-6f" >"$work/flaky.cl"
evaluate() { # evaluate SEED WANT_STATUS
    "$temper" eval "$work/flaky.cl" --seed "$1" --time-budget 0.05 >"$work/eval.out" 2>"$work/eval.err"
    local status=$?
    [ $status -eq "$2" ] && ok "eval --seed $1: exit $status" ||
        { fail "eval --seed $1: exit $status, want $2"; cat "$work/eval.out" "$work/eval.err"; exit 1; }
}
served() { # served WHAT: best, the knowledge search and the report all serve it
    "$temper" best vector_add >"$work/best.out" 2>"$work/best.err"
    [ $? -eq 0 ] && grep -q "flaky.cl" "$work/best.out" && ok "best serves it ($1)" ||
        fail "best ($1): $(cat "$work/best.out" "$work/best.err")"
    "$temper" knowledge search vector_add --task vector_add >"$work/k.out" 2>"$work/k.err"
    grep -q "the best opencl kernel of vector_add" "$work/k.out" && ok "knowledge search offers it ($1)" ||
        fail "knowledge search ($1): $(cat "$work/k.out" "$work/k.err")"
    "$temper" report --task vector_add -o "$work/r.html" 2>"$work/r.err" && grep -q 'class="pt best"' "$work/r.html" &&
        ok "report --task marks it best ($1)" || fail "report --task ($1): $(cat "$work/r.err")"
}
not_served() { # not_served WHAT
    "$temper" best vector_add >"$work/best.out" 2>"$work/best.err"
    local status=$?
    [ $status -eq 1 ] && [ ! -s "$work/best.out" ] &&
        grep -q "1 configuration once correct is left out: its latest evaluation is not correct" "$work/best.err" &&
        ok "best: exit 1, says why ($1)" || fail "best ($1): exit $status: $(cat "$work/best.out" "$work/best.err")"
    "$temper" knowledge search vector_add --task vector_add >"$work/k.out" 2>"$work/k.err"
    [ $? -eq 0 ] && ! grep -q "the best opencl kernel of vector_add" "$work/k.out" &&
        ok "knowledge search does not offer it ($1)" || fail "knowledge search ($1): $(cat "$work/k.out" "$work/k.err")"
    "$temper" report --task vector_add -o "$work/r.html" 2>"$work/r.err" && ! grep -q 'class="pt best"' "$work/r.html" &&
        ok "report --task marks no best ($1)" || fail "report --task ($1): $(cat "$work/r.err")"
}

evaluate 2 0 # another input: correct and timed
served "correct once"
evaluate 1 1 # seed 1's input: incorrect
not_served "then incorrect"
evaluate 1 1
not_served "incorrect twice"
evaluate 3 0
served "correct again"

[ $failures -eq 0 ] && echo "all passed" || echo "$failures failed"
[ $failures -eq 0 ]
