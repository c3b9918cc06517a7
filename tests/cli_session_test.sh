#!/usr/bin/env bash
# cli_session_test.sh: the command line as a client of the session: a candidate on standard input
# (`temper eval - --lang opencl`), a missing language, a missing file among several (an invalid
# result for it, the others still evaluated), timing warnings, and tune's progress lines and
# Ctrl-C (what it has, the best so far, the --resume command, and the run resumes).
# usage: cli_session_test.sh TEMPER_BINARY SOURCE_DIR
set -u
temper=$1
src=$2
work=$(mktemp -d /tmp/temper-cli-session-XXXXXX)
# softmax (the tune's task) at a small CPU bench shape (tests/small_bench_tasks.sh): what is checked
# of the tune is its progress lines, Ctrl-C and --resume, which no shape changes, and each of its
# timed evaluations takes at least 10 samples of the whole bench shape however short its budget.
# vector_add, whose timing's warnings are checked, stays the suite's.
"$src/tests/small_bench_tasks.sh" "$work/tasks" "$src/tasks" softmax='{"R": 128, "C": 4096}' || exit 1
export TEMPER_HOME=$work/home TEMPER_TASKS=$work/tasks:$src/tasks
db=$TEMPER_HOME/temper.db
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }
good=$src/tasks/L1/vector_add/naive.cl

# 1. A candidate on standard input, with its language.
"$temper" eval - --lang opencl --no-timing --checks-only --json <"$good" >"$work/out" 2>"$work/err"
status=$?
[ $status -eq 0 ] && ok "eval - --lang opencl exits 0" || { fail "eval - exit $status"; sed 's/^/     /' "$work/err"; }
grep -q '"verdict": "correct"' "$work/out" && ok "the candidate on stdin is correct" || fail "no correct verdict"
grep -q '"candidate": "<stdin>.cl"' "$work/out" && ok "it is named <stdin>" || fail "not named <stdin>"
stored=$(sqlite3 "$db" "select count(*) from candidates where source = cast(readfile('$good') as text)" 2>/dev/null ||
    sqlite3 "$db" "select count(*) from candidates")
[ "$stored" = 1 ] && ok "stdin's source is in the store" || fail "stdin's source stored $stored times"

# 2. Standard input without a language, or with an unknown one: bad usage, said as such.
"$temper" eval - --no-timing <"$good" >"$work/out" 2>"$work/err"
status=$?
[ $status -eq 2 ] && ok "eval - without --lang exits 2" || fail "eval - without --lang exit $status"
grep -q -- "--lang" "$work/err" && ok "the message names --lang" || fail "no --lang in: $(cat "$work/err")"
"$temper" eval - --lang fortran <"$good" >"$work/out" 2>"$work/err"
status=$?
[ $status -eq 2 ] && grep -q "fortran" "$work/err" && ok "an unknown language is named, exit 2" ||
    fail "--lang fortran: exit $status, $(cat "$work/err")"

# 3. A missing file among several: it gets an invalid result, the others are evaluated and stored.
before=$(sqlite3 "$db" "select count(*) from evaluations")
"$temper" eval "$good" "$work/missing.cl" "$good" --no-timing --checks-only --json >"$work/out" 2>"$work/err"
status=$?
after=$(sqlite3 "$db" "select count(*) from evaluations")
[ $status -eq 2 ] && ok "a missing file among several exits 2" || fail "missing file among several: exit $status"
[ "$(wc -l <"$work/out")" = 3 ] && ok "three results" || fail "$(wc -l <"$work/out") results, expected 3"
sed -n 2p "$work/out" | grep -q '"verdict":"invalid"' && sed -n 2p "$work/out" | grep -q 'missing.cl' &&
    ok "the missing file is invalid, named" || fail "second line: $(sed -n 2p "$work/out" | cut -c1-200)"
[ "$(grep -c '"verdict":"correct"' "$work/out")" = 2 ] && ok "the other two were evaluated" ||
    fail "the other files were not both evaluated"
[ $((after - before)) = 2 ] && ok "the two evaluated are stored, the missing one not" ||
    fail "stored $((after - before)) evaluations, expected 2"
grep -q "missing.cl" "$work/err" && ok "stderr names the missing file" || fail "stderr: $(cat "$work/err")"

# 3b. --sanitize on an OpenCL device says that it is not supported, in the result and the verdict
#     line, and changes nothing else: compute-sanitizer checks CUDA kernels only (a stand-in that
#     would report errors is on the PATH, and must not be run). What the findings do to a CUDA
#     verdict is unit_compare's test_deep_check_verdicts.
mkdir -p "$work/bin"
cat >"$work/bin/compute-sanitizer" <<'TOOL'
#!/bin/sh
echo "========= Invalid __global__ write of size 4 bytes"
echo "========= ERROR SUMMARY: 2 errors"
TOOL
chmod +x "$work/bin/compute-sanitizer"
PATH=$work/bin:$PATH "$temper" eval "$good" --sanitize --no-timing --checks-only --json >"$work/out" 2>"$work/err"
status=$?
[ $status -eq 0 ] && ok "--sanitize on OpenCL leaves a correct kernel correct" || fail "eval --sanitize exit $status"
grep -q '"verdict": "correct"' "$work/out" && grep -q 'is not supported on opencl device' "$work/out" &&
    ok "the result says --sanitize is not supported on OpenCL" || fail "sanitize on OpenCL: $(grep -A2 sanitize "$work/out")"
PATH=$work/bin:$PATH "$temper" eval "$good" --sanitize --no-timing --checks-only >"$work/out" 2>"$work/err"
grep -q '^sanitize   not run: --sanitize is not supported on opencl' "$work/out" &&
    ok "the verdict table says so too" || fail "table: $(cat "$work/out")"
PATH=$work/bin:$PATH "$temper" eval "$src/tests/cases/opencl/partial_write.cl" --sanitize --no-timing --checks-only --json \
    >"$work/out" 2>"$work/err"
grep -q '"verdict": "incorrect"' "$work/out" && grep -q 'is not supported on opencl device' "$work/out" &&
    ok "an incorrect kernel's result says so too" || fail "sanitize on OpenCL, incorrect: $(grep -A2 sanitize "$work/out")"
"$temper" eval "$good" --sanitize=everything --no-timing >"$work/out" 2>"$work/err"
status=$?
[ $status -eq 2 ] && grep -q "takes no value or =strict" "$work/err" && ok "--sanitize=VALUE other than strict is a usage error" ||
    fail "--sanitize=everything: exit $status, $(cat "$work/err")"

# 4. A timing says when it cannot be trusted as it is: load over the cores, or spread over 10%.
# (Every result has the keys "warning" and "warnings"; null when there is nothing to say.)
cores=$(nproc)
load_before=$(cut -d' ' -f1 /proc/loadavg)
"$temper" eval "$src/tests/cases/opencl/correct_vector_add_float4.cl" --time-budget 0.2 --json >"$work/out" 2>"$work/err"
status=$?
load_after=$(cut -d' ' -f1 /proc/loadavg)
spread=$(grep -o '"spread": [0-9.e+-]*' "$work/out" | head -1 | cut -d' ' -f2)
# (its verdict is not the point: calibrated on a loaded machine, a fast timing may even be judged
# impossible; a timing must be there)
grep -q '"median_ms"' "$work/out" && ok "a timed eval has a timing (exit $status)" || fail "no timing (exit $status)"
if awk "BEGIN { exit !($load_before > $cores && $load_after > $cores) }" ||
    awk "BEGIN { exit !(${spread:-0} > 0.10) }"; then
    grep -q '"warning": "' "$work/out" && grep -q '"warnings": \[' "$work/out" &&
        ok "the timing warns (load $load_before-$load_after on $cores cores, spread $spread)" ||
        fail "no timing warning with load $load_before-$load_after on $cores cores, spread $spread"
elif awk "BEGIN { exit !($load_before < $cores && $load_after < $cores && ${spread:-1} < 0.10) }"; then
    grep -q '"warning": "' "$work/out" && fail "a timing warns with low load and spread $spread" ||
        ok "a quiet timing does not warn"
else
    ok "load crossed the core count during the run: no timing warning expected either way"
fi

# 5. Tune: one progress line per evaluation on stderr (not a terminal here); Ctrl-C prints what it
#    has, the best so far and the --resume command, exits 130, and the run resumes.
candidate=$src/tasks/L1/softmax/rows.cl
"$temper" tune "$candidate" --budget 6 --batch 2 --retime 1 --strategy random --seed 5 \
    >"$work/tune.out" 2>"$work/tune.err" &
pid=$!
for _ in $(seq 1 1200); do
    [ "$(grep -c '^tune ' "$work/tune.err")" -ge 2 ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
done
kill -INT $pid 2>/dev/null
wait $pid
status=$?
lines=$(grep -c '^tune ' "$work/tune.err")
[ $status -eq 130 ] && ok "Ctrl-C ends tune with 130" || { fail "tune after SIGINT: exit $status"; tail -5 "$work/tune.err"; }
[ "$lines" -ge 2 ] && ok "$lines progress lines before Ctrl-C" || fail "$lines progress lines"
grep -q "best so far" "$work/tune.err" && ok "it prints the best so far" || fail "no best so far"
resume=$(sed -n 's/^temper: resume with: //p' "$work/tune.err")
[ -n "$resume" ] && ok "it prints the resume command" || fail "no resume command in: $(tail -3 "$work/tune.err")"
unfinished=$(sqlite3 "$db" "select count(*) from runs where finished_at is null")
[ "$unfinished" = 1 ] && ok "the run stays unfinished" || fail "unfinished runs: $unfinished"
# shellcheck disable=SC2086
case "$resume" in "$(readlink -f "$temper") tune "*) ok "it names this program by its path" ;;
    *) fail "the resume command does not start with this program's path: $resume" ;; esac
eval "$resume --json" >"$work/resume.json" 2>"$work/resume.err"
status=$?
[ $status -eq 0 ] && ok "the printed command resumes (exit 0)" || { fail "resume exit $status"; tail -5 "$work/resume.err"; }
grep -q '"resumed_run"' "$work/resume.json" && ok "it continued the interrupted run" || fail "resume started a new run"
evaluations=$(sed -n 's/^  "evaluations": \([0-9]*\).*/\1/p' "$work/resume.json")
retimes=$(grep -c '^tune .* re-time ' "$work/resume.err")
[ "$(grep -c '^tune ' "$work/resume.err")" = $((evaluations + retimes)) ] &&
    ok "one progress line per evaluation ($evaluations and $retimes re-timing)" ||
    fail "$(grep -c '^tune ' "$work/resume.err") progress lines for $evaluations evaluations and $retimes re-timings"
[ "$(sqlite3 "$db" "select count(*) from runs where finished_at is null")" = 0 ] && ok "the run is finished" ||
    fail "the run is still unfinished"

rm -rf "$work"
echo "$failures failures"
[ "$failures" -eq 0 ]
