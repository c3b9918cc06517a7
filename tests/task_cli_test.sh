#!/usr/bin/env bash
# task_cli_test.sh: a broken task, as the command line meets it. Tasks in a temporary folder: a
# name that is not its folder's, a name with '../', an i32 size past 2^31 - 1, a reference that
# does not compile, one that leaves an element unwritten, one that crashes at the shape N=7, and
# baselines that are wrong, crash or hang. Each `temper eval` of a candidate for them exits 2 with
# a message naming the task (and the field, or the shape and the signal, or the baseline and what
# it did), and the store records nothing for the candidate.
# usage: task_cli_test.sh TEMPER_BINARY SOURCE_DIR
set -u
temper=$1
src=$2
work=$(mktemp -d /tmp/temper-task-cli-XXXXXX)
export TEMPER_HOME=$work/home TEMPER_CACHE=$work/cache
failures=0

# make_task FOLDER NAME: a copy of vector_add in tasks/L1/FOLDER naming itself NAME, and a
# candidate for it in $work/FOLDER.cl.
make_task() {
    local dir=$work/tasks/L1/$1
    mkdir -p "$dir"
    cp "$src/tasks/L1/vector_add/reference.c" "$src/tasks/L1/vector_add/naive.cl" \
        "$src/tasks/L1/vector_add/naive.cu" "$dir/"
    sed "s|\"name\": \"vector_add\"|\"name\": \"$2\"|" "$src/tasks/L1/vector_add/task.json" >"$dir/task.json"
    sed "s/@temper task vector_add/@temper task $1/" "$src/tasks/L1/vector_add/naive.cl" >"$work/$1.cl"
}

# expect_task_error FOLDER DESCRIPTION TEXT...: eval exits 2 and stderr holds every TEXT. Options
# in $eval_options go to `temper eval` too.
eval_options=
expect_task_error() {
    local folder=$1 what=$2
    shift 2
    # shellcheck disable=SC2086
    "$temper" eval "$work/$folder.cl" --tasks "$work/tasks" --no-timing $eval_options >"$work/out" 2>"$work/err"
    local got=$?
    if [ "$got" -ne 2 ]; then
        echo "FAIL $what: exit $got, expected 2"
        sed 's/^/     /' "$work/out" "$work/err" | head -20
        failures=$((failures + 1))
        return
    fi
    for text in "$@"; do
        if ! grep -qF -- "$text" "$work/err"; then
            echo "FAIL $what: '$text' not in the message:"
            sed 's/^/     /' "$work/err" | head -5
            failures=$((failures + 1))
            return
        fi
    done
    echo "ok   $what: $(head -1 "$work/err")"
}

make_task mismatch other
expect_task_error mismatch "a name that is not its folder's" "mismatch/task.json" "name: 'other'" \
    "not the name of its folder"

make_task evil "../../evil"
expect_task_error evil "a name with ../" "evil/task.json" "name: '../../evil'" "a-z, 0-9 and _"

make_task huge huge
sed -i 's/{"N": 1000003}\]/{"N": 1000003}, {"N": 3000000000}]/' "$work/tasks/L1/huge/task.json"
expect_task_error huge "an i32 size past 2^31 - 1" "huge/task.json" "shapes.check[7].N: 3000000000" \
    "past the largest i32"

make_task crashing crashing
cat >"$work/tasks/L1/crashing/reference.c" <<'C'
void reference(double **out, const double **in, const long long *s);
void reference(double **out, const double **in, const long long *s)
{
    if (s[0] == 7)
        *(volatile int *)0 = 1;
    for (long long i = 0; i < s[0]; i++)
        out[0][i] = in[0][i] + in[1][i];
}
C
# The signal names the crash; under AddressSanitizer, which reports a SIGSEGV itself and exits 1,
# the exit status does, or SIGABRT with ASAN_OPTIONS=abort_on_error=1 (as scripts/test.sh runs it).
crash_words="Segmentation fault"
if ldd "$temper" 2>/dev/null | grep -q libasan; then
    case "${ASAN_OPTIONS:-}" in
    *abort_on_error=1*) crash_words="Aborted" ;;
    *) crash_words="exited with status 1" ;;
    esac
fi
expect_task_error crashing "a reference that crashes" "task error" "task crashing" "shape N=7" "$crash_words"

# A tune of a candidate for that task ends at its first evaluation with the task's error (exit 2),
# instead of re-running the crash at every point. The reference says on stderr each time it
# crashes (the worker's stderr is kept with TEMPER_WORKER_STDERR=1): once, since the points of
# the batch after the crashing one are cancelled (skipped, or killed at the worker), not run.
sed 's/@temper task vector_add/@temper task crashing/' "$src/tasks/L1/vector_add/fast.cl" >"$work/crashing_fast.cl"
cat >"$work/tasks/L1/crashing/reference.c" <<'C'
#include <unistd.h>
void reference(double **out, const double **in, const long long *s);
void reference(double **out, const double **in, const long long *s)
{
    if (s[0] == 7) {
        static const char line[] = "temper-test: the reference crashes at N=7\n";
        (void)!write(2, line, sizeof(line) - 1);
        *(volatile int *)0 = 1;
    }
    for (long long i = 0; i < s[0]; i++)
        out[0][i] = in[0][i] + in[1][i];
}
C
TEMPER_WORKER_STDERR=1 "$temper" tune "$work/crashing_fast.cl" --tasks "$work/tasks" --budget 12 --batch 4 \
    >"$work/out" 2>"$work/err"
got=$?
crashes=$(grep -c "temper-test: the reference crashes" "$work/err")
if [ "$got" -ne 2 ]; then
    echo "FAIL a tune of a crashing task: exit $got, expected 2"; sed 's/^/     /' "$work/err" | tail -5
    failures=$((failures + 1))
elif ! grep -q "temper: task error: .*task crashing.*N=7" "$work/err"; then
    echo "FAIL a tune of a crashing task: no task error naming the task and the shape:"
    sed 's/^/     /' "$work/err" | tail -5; failures=$((failures + 1))
elif [ "$crashes" -ne 1 ] || grep -q "^tune " "$work/err"; then
    echo "FAIL a tune of a crashing task went on after the task's error: $crashes crashes"
    sed 's/^/     /' "$work/err" | tail -8; failures=$((failures + 1))
else
    echo "ok   a tune of a crashing task ends with its error after $crashes evaluation(s)"
fi

# A reference that does not compile: the parent builds it before the job goes to a worker (a
# CUDA worker refuses exec), and it is the task's error, with the compiler's words.
make_task broken broken
printf 'void reference(double **out, const double **in, const long long *s) { this is not C; }\n' \
    >"$work/tasks/L1/broken/reference.c"
expect_task_error broken "a reference that does not compile" "task error" "broken/reference.c" \
    "does not compile"

# A reference that leaves an output element unwritten at N=7: the task's error (the candidate
# would otherwise be judged incorrect against a NaN it could never match).
make_task holey holey
cat >"$work/tasks/L1/holey/reference.c" <<'C'
void reference(double **out, const double **in, const long long *s);
void reference(double **out, const double **in, const long long *s)
{
    for (long long i = 0; i < s[0]; i++)
        if (!(s[0] == 7 && i == 3))
            out[0][i] = in[0][i] + in[1][i];
}
C
expect_task_error holey "a reference that leaves an element unwritten" "task error" "task holey" "c[3]" \
    "shape N=7" "every output element must be a finite number"

# The baseline judges every candidate at the bench shapes, so it is checked against the reference
# at the check shapes first: one that is wrong there (c = a - b) or hangs at N=7, or that crashes
# at the bench shape (a store 4 TiB past c, which kills PoCL's worker, past the largest check
# shape) is the task's error, naming the task, the baseline's file and what it did; the suite's
# correct vector_add is not judged against it, nor stored.
# make_baseline FOLDER SED-SCRIPT: a task FOLDER whose naive.cl is the suite's, edited by SED-SCRIPT.
make_baseline() {
    make_task "$1" "$1"
    sed -i "$2" "$work/tasks/L1/$1/naive.cl"
}
make_baseline wrong_baseline 's/c\[i\] = a\[i\] + b\[i\]/c[i] = a[i] - b[i]/'
expect_task_error wrong_baseline "a baseline that computes a - b" "task error" "wrong_baseline/naive.cl" \
    "of task wrong_baseline is wrong" "wrong output at shape N=1" "the C reference"
make_baseline crashing_baseline \
    's/^    int i = get_global_id(0);$/&\n    if (N > 2000000 \&\& i == 0) c[(size_t)1 << 40] = 0.0f;/'
expect_task_error crashing_baseline "a baseline that crashes at the bench shape" "task error" "the baseline crashed" \
    "$crash_words" "crashing_baseline/naive.cl of task crashing_baseline" "at bench shape N="
# It runs at N=1 first (PoCL compiles then, with 30 s of grace), so at N=7 the 2 s limit holds.
make_baseline hanging_baseline \
    's/^    int i = get_global_id(0);$/&\n    volatile int spins = 0;\n    while (N == 7 \&\& a[0] == a[0]) spins++;/'
eval_options="--launch-timeout 2"
t0=$(date +%s)
expect_task_error hanging_baseline "a baseline that hangs" "task error" "a launch of the baseline hung" \
    "2 s limit" "hanging_baseline/naive.cl of task hanging_baseline" "shape N=7"
echo "     (the hanging baseline's evaluation took $(($(date +%s) - t0)) s)"
eval_options=

# A task shadowed by one of the same name earlier in the search path is listed once.
mkdir -p "$work/shadow/L1"
cp -r "$src/tasks/L1/vector_add" "$work/shadow/L1/"
n=$("$temper" tasks --tasks "$work/shadow:$src/tasks" 2>"$work/err" | grep -c "^  vector_add ")
if [ "$n" = 1 ]; then echo "ok   a shadowed task is listed once"; else
    echo "FAIL a shadowed task is listed $n times"; failures=$((failures + 1)); fi

# Nothing was recorded for any of these candidates, and nothing was built outside the cache.
if command -v sqlite3 >/dev/null && [ -f "$TEMPER_HOME/temper.db" ]; then
    n=$(sqlite3 "$TEMPER_HOME/temper.db" "select count(*) from evaluations")
    if [ "$n" = 0 ]; then echo "ok   the store holds no evaluation"; else
        echo "FAIL the store holds $n evaluations, expected none"; failures=$((failures + 1)); fi
else
    echo "ok   no store was written"
fi
if [ -e "$work/evil" ] || [ -e "$work/cache/evil" ] || ls "$work"/cache/ref/*evil* >/dev/null 2>&1; then
    echo "FAIL something was built for the task named ../../evil"; failures=$((failures + 1))
else
    echo "ok   nothing was built for the task named ../../evil"
fi

if [ "$failures" = 0 ]; then
    rm -rf "$work"
    echo "all passed"
else
    echo "$failures failures (files in $work)"
fi
[ "$failures" = 0 ]
