#!/usr/bin/env bash
# store_test.sh: the store through the command line, on PoCL: a task whose content changes (its
# tolerance) never has results judged under the old content reused by tune or served by best;
# store failures end eval and tune with exit status 4 and a message naming the file, and once
# writes work again `tune --resume` finishes with nothing lost or repeated (an injected failure,
# and a real full disk on a small tmpfs where this test may mount one); a damaged store is named
# as such.
# usage: store_test.sh TEMPER_BINARY SOURCE_DIR
set -u
temper=$1
src=$2
work=$(mktemp -d /tmp/temper-store-XXXXXX)
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }
show() { sed 's/^/     /' "$1" | tail -"${2:-5}"; }

# A private copy of the softmax task, so that its content can change; at a small CPU bench shape
# (tests/small_bench_tasks.sh): what is asserted is where results are stored and reused, which no
# shape changes, and each timed evaluation takes at least 10 samples of the whole bench shape
# (8 times this one in the suite) however short its budget.
"$src/tests/small_bench_tasks.sh" "$work/tasks" "$src/tasks" softmax='{"R": 128, "C": 4096}' || exit 1
export TEMPER_HOME=$work/home TEMPER_TASKS=$work/tasks
db=$TEMPER_HOME/temper.db
cand=$work/tasks/L1/softmax/rows.cl
q() { sqlite3 "$db" "$1"; }

# 1. Results under the task's first content.
"$temper" eval "$cand" --json >"$work/eval1.json" 2>"$work/eval1.err"
[ $? -eq 0 ] && ok "eval of the first content exits 0" || { fail "eval exit"; show "$work/eval1.err"; }
h1=$(q "select task_hash from evaluations order by id desc limit 1")
[ ${#h1} = 16 ] && ok "the result is stored under the task's content hash $h1" || fail "task_hash '$h1'"
"$temper" tune "$cand" --budget 3 --batch 3 --retime 1 --strategy random --seed 1 --json >"$work/tune1.json" 2>"$work/tune1.err"
[ $? -eq 0 ] && ok "tune of the first content exits 0" || { fail "tune exit"; show "$work/tune1.err"; }
"$temper" best softmax >/dev/null 2>&1 && ok "best serves a kernel of the first content" || fail "best before the change"
dk=$(q "select device_key from evaluations order by id desc limit 1")
case "$dk" in opencl\|*) ok "results are keyed by the device's identity ($dk)" ;; *) fail "device_key '$dk'" ;; esac

# 2. The tolerance changes (atol, looser, so that the same kernels stay correct): nothing judged
#    under the old content counts.
sed -i 's/"atol": 1e-12/"atol": 2e-12/' "$work/tasks/L1/softmax/task.json"
grep -q '"atol": 2e-12' "$work/tasks/L1/softmax/task.json" || fail "the tolerance was not changed"
"$temper" best softmax >"$work/best2.out" 2>"$work/best2.err"
status=$?
[ $status -eq 1 ] && grep -q "judged against the task's current content" "$work/best2.err" && grep -q "left out" "$work/best2.err" &&
    ok "best after the change: none for the current content, the old ones left out (exit 1)" ||
    { fail "best after the change: exit $status"; show "$work/best2.err"; show "$work/best2.out"; }
"$temper" tune "$cand" --budget 3 --batch 3 --retime 1 --strategy random --seed 1 --json >"$work/tune2.json" 2>"$work/tune2.err"
[ $? -eq 0 ] && ok "tune after the change exits 0" || { fail "tune after the change"; show "$work/tune2.err"; }
reused=$(sed -n 's/.*"from_store": \([0-9]*\).*/\1/p' "$work/tune2.json" | head -1)
[ "$reused" = 0 ] && ok "tune after the change reuses none of the 3 old configurations" ||
    fail "tune after the change took $reused from the store"
"$temper" eval "$cand" --json >/dev/null 2>"$work/eval2.err" || { fail "eval after the change"; show "$work/eval2.err"; }
h2=$(q "select task_hash from evaluations order by id desc limit 1")
[ ${#h2} = 16 ] && [ "$h2" != "$h1" ] && ok "eval after the change stores under the new content hash" ||
    fail "task hashes '$h1' then '$h2'"
"$temper" best softmax --json >"$work/best3.json" 2>"$work/best3.err" || { fail "best after re-tuning"; show "$work/best3.err"; }
grep -q "\"task_hash\": \"$h2\"" "$work/best3.json" && ok "best serves a result of the new content only" ||
    fail "best after re-tuning: $(grep task_hash "$work/best3.json")"
"$temper" best softmax --device opencl:0 >/dev/null 2>"$work/best4.err" && ok "best --device opencl:0 maps the index to the device" ||
    { fail "best --device opencl:0"; show "$work/best4.err"; }

# 3. An injected write failure (TEMPER_STORE_FAIL_AFTER) in the middle of a tune.
before=$(q "select count(*) from evaluations")
TEMPER_STORE_FAIL_AFTER=0 "$temper" eval "$cand" --no-timing >"$work/eval3.out" 2>"$work/eval3.err"
status=$?
[ $status -eq 4 ] && grep -q "$db" "$work/eval3.err" && grep -q "verdict" "$work/eval3.out" &&
    ok "eval whose write fails prints its result, names the store and exits 4" ||
    { fail "eval with a failing store: exit $status"; show "$work/eval3.err"; }
sed -i 's/"atol": 2e-12/"atol": 3e-12/' "$work/tasks/L1/softmax/task.json" # a fresh content: nothing to reuse
TEMPER_STORE_FAIL_AFTER=4 "$temper" tune "$cand" --budget 8 --batch 2 --retime 1 --strategy random --seed 5 --json \
    >"$work/tune3.json" 2>"$work/tune3.err"
status=$?
[ $status -eq 4 ] && grep -q "$db" "$work/tune3.err" && grep -q "TEMPER_STORE_FAIL_AFTER" "$work/tune3.err" &&
    ok "tune whose 5th write fails exits 4 naming the store and the cause" ||
    { fail "tune with a failing store: exit $status"; show "$work/tune3.err"; }
run=$(q "select id from runs where finished_at is null order by id desc limit 1")
stored=$(q "select count(*) from evaluations where run_id = '$run'")
[ -n "$run" ] && [ "$stored" = 3 ] && ok "the failed run is unfinished, its 3 stored results kept" ||
    fail "unfinished run '$run' holds $stored results"
"$temper" tune "$cand" --resume --retime 1 --json >"$work/resume3.json" 2>"$work/resume3.err"
[ $? -eq 0 ] && ok "tune --resume finishes once writes work" || { fail "tune --resume"; show "$work/resume3.err"; }
grep -q "\"resumed_run\": $run" "$work/resume3.json" && ok "--resume continued run $run" || fail "--resume did not continue run $run"
from=$(sed -n 's/.*"from_store": \([0-9]*\).*/\1/p' "$work/resume3.json" | head -1)
evals=$(sed -n 's/^  "evaluations": \([0-9]*\).*/\1/p' "$work/resume3.json")
dups=$(q "select count(*) from (select options from evaluations where run_id = $run and result like '%\"tune_phase\":\"screen\"%' group by options having count(*) > 1)")
[ "$from" = 3 ] && [ "$evals" = 8 ] && [ "$dups" = 0 ] &&
    ok "the resumed run took the 3 stored results, ran the other 5, screened nothing twice" ||
    fail "resumed run: from_store $from, evaluations $evals, $dups screened twice"

# 4. A real full disk: the store on a small tmpfs in a private mount namespace. eval finds it
#    full; a tune finds it full part way (the disk is filled once it has stored two results),
#    then, with space back, resumes with nothing lost or repeated.
if unshare -m true 2>/dev/null; then
    full=$work/full
    cat >"$work/full.sh" <<INNER
set -u
mkdir -p "$full"
mount -t tmpfs -o size=32m tmpfs "$full" || exit 77
mkdir -p "$full/home"
cp "$db" "$full/home/temper.db"
export TEMPER_HOME=$full/home
fdb=$full/home/temper.db
dd if=/dev/zero of="$full/filler" bs=64k 2>/dev/null
"$temper" eval "$cand" >"$work/full-eval.out" 2>"$work/full-eval.err"; echo \$? >"$work/full-eval.rc"
rm -f "$full/filler"
sed -i 's/"atol": 3e-12/"atol": 4e-12/' "$work/tasks/L1/softmax/task.json" # nothing to reuse
prev=\$(sqlite3 "\$fdb" "select coalesce(max(id), 0) from runs")
echo \$prev >"$work/full-prev"
"$temper" tune "$cand" --budget 8 --batch 2 --retime 1 --strategy random --seed 9 >/dev/null 2>"$work/full-tune.err" &
pid=\$!
for _ in \$(seq 1 1200); do
    n=\$(sqlite3 "\$fdb" "select count(*) from evaluations where run_id > \$prev" 2>/dev/null)
    [ "\${n:-0}" -ge 2 ] && break
    sleep 0.1
done
dd if=/dev/zero of="$full/filler" bs=64k 2>/dev/null
wait \$pid; echo \$? >"$work/full-tune.rc"
sqlite3 "\$fdb" "select max(id) from runs" >"$work/full-run"
sqlite3 "\$fdb" "select count(*) from evaluations where run_id = (select max(id) from runs)" >"$work/full-stored"
rm -f "$full/filler"
"$temper" tune "$cand" --resume --retime 1 --json >"$work/full-resume.json" 2>"$work/full-resume.err"
echo \$? >"$work/full-resume.rc"
sqlite3 "\$fdb" "select count(*) from (select options from evaluations where run_id = \$(cat "$work/full-run")
    and result like '%\\"tune_phase\\":\\"screen\\"%' group by options having count(*) > 1)" >"$work/full-dups"
sqlite3 "\$fdb" "pragma integrity_check" >"$work/full-check.out"
INNER
    unshare -m --propagation private bash "$work/full.sh"
    inner=$?
    if [ $inner -eq 77 ]; then
        echo "SKIP full disk on tmpfs: mounting a tmpfs is not allowed here (the injected failure above stands in)"
    else
        [ "$(cat "$work/full-eval.rc")" = 4 ] && grep -q "temper.db" "$work/full-eval.err" &&
            ok "eval on a full disk exits 4: $(head -1 "$work/full-eval.err")" ||
            { fail "eval on a full disk: exit $(cat "$work/full-eval.rc")"; show "$work/full-eval.err"; }
        run=$(cat "$work/full-run")
        stored=$(cat "$work/full-stored")
        [ "$run" -gt "$(cat "$work/full-prev")" ] && [ "$stored" -ge 2 ] && [ "$(cat "$work/full-tune.rc")" = 4 ] && grep -q "temper.db" "$work/full-tune.err" &&
            ok "tune whose disk fills part way exits 4 ($stored results stored): $(tail -1 "$work/full-tune.err")" ||
            { fail "tune on a filling disk: exit $(cat "$work/full-tune.rc")"; show "$work/full-tune.err"; }
        from=$(sed -n 's/.*"from_store": \([0-9]*\).*/\1/p' "$work/full-resume.json" | head -1)
        [ "$(cat "$work/full-resume.rc")" = 0 ] && grep -q "\"resumed_run\": $run" "$work/full-resume.json" &&
            grep -q '"evaluations": 8' "$work/full-resume.json" && [ "$from" = "$stored" ] &&
            [ "$(cat "$work/full-dups")" = 0 ] &&
            ok "with space back, tune --resume continues run $run: $stored from the store, 8 in all, none screened twice" ||
            { fail "tune --resume after the disk filled: exit $(cat "$work/full-resume.rc"), from_store '$from' of $stored, dups $(cat "$work/full-dups")"; show "$work/full-resume.err"; }
        [ "$(cat "$work/full-check.out")" = ok ] && ok "the store on the filled disk is intact" ||
            fail "integrity check after the full disk: $(cat "$work/full-check.out")"
    fi
else
    echo "SKIP full disk on tmpfs: unshare -m is not available (the injected failure above stands in)"
fi

# 5. A damaged store is named as such, by best and by eval, with exit status 4.
mkdir -p "$work/bad"
head -c 65536 /dev/urandom >"$work/bad/temper.db"
TEMPER_HOME=$work/bad "$temper" best softmax >/dev/null 2>"$work/bad-best.err"
status=$?
[ $status -eq 4 ] && grep -q "is damaged" "$work/bad-best.err" && grep -q "integrity_check" "$work/bad-best.err" &&
    ok "best on a damaged store says so and exits 4" || { fail "best on a damaged store: exit $status"; show "$work/bad-best.err"; }
TEMPER_HOME=$work/bad "$temper" eval "$cand" --no-timing >/dev/null 2>"$work/bad-eval.err"
status=$?
[ $status -eq 4 ] && grep -q "is damaged" "$work/bad-eval.err" && ok "eval on a damaged store says so and exits 4" ||
    { fail "eval on a damaged store: exit $status"; show "$work/bad-eval.err"; }

# Several processes opening one new store at once (a gym's workers starting together): each waits
# for the others' locks, none fails (switching a new file to WAL answered "database is locked" at
# once, in about one start in ten). A race: twenty pairs make losing it likely when it is there.
locked=0
for i in $(seq 1 20); do
    home=$work/race$i
    TEMPER_HOME=$home "$temper" history >/dev/null 2>"$work/race$i.a" &
    first=$!
    TEMPER_HOME=$home "$temper" history >/dev/null 2>"$work/race$i.b"
    second=$?
    wait $first
    [ $? -eq 4 ] || [ $second -eq 4 ] && locked=$((locked + 1))
done
[ $locked -eq 0 ] && ok "20 pairs of processes opening one new store at once: none failed" ||
    { fail "$locked of 20 pairs: a store failure opening a new store"; show "$work"/race*.[ab]; }

[ $failures -eq 0 ] && rm -rf "$work"
echo "$failures failures"
[ "$failures" -eq 0 ]
