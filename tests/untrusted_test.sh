#!/usr/bin/env bash
# untrusted_test.sh: what a candidate's code can do from inside its worker, on a backend whose
# kernels run in the worker's address space (PoCL).
# 1. A candidate that fails after writing where no guard zone sees it (past the allocation that
#    holds its scratch buffer, into the worker's heap on PoCL) must not change the verdict of the
#    candidates evaluated after it: a worker that ran a failed candidate is replaced before the next
#    one. Checked in a batch in both orders and in a tune whose configurations alternate between the
#    two. Without the replacement, on PoCL, a correct configuration after a stray one got
#    compile_error (the tune) and the batch's stray writer hung its worker.
# 2. A kernel's "shell" (any code run inside the worker) cannot write a cache another evaluation
#    loads, read the caller's environment, folder or store, signal its parent, leave a process
#    behind, reach a host socket or read other processes' /proc: `temper devices --selftest` starts
#    a worker exactly as an evaluation does and tries each of these from inside its confinement
#    (worker_selftest.c), with every part of the sandbox, without Landlock and without namespaces.
#    On main before issue 28 (items 2 and 3) 21 of them got through.
# 3. Whatever changes the caches on disk without the key (here the test itself, as a worker on a
#    machine without Landlock would) changes no verdict: a reference library rewritten to
#    c = a - b and a wrong kernel's binary copied over every build-cache entry are refused by
#    their seals and built again. On main a wrong kernel was then correct.
set -u
temper=$1
src=$2
work=$(mktemp -d /tmp/temper-untrusted-XXXXXX)
export TEMPER_HOME=$work/home TEMPER_CACHE=$work/cache TEMPER_TASKS=$src/tasks
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }
stray=$src/tests/untrusted/scratch_stray_writes.cl
correct=$src/tests/cases/opencl/correct_vector_add_float4.cl

if ! "$temper" devices 2>/dev/null | grep -q '^opencl'; then
    echo "SKIP: no OpenCL device"
    exit 77
fi

# verdicts FILE...: the verdict column of `temper eval FILE... --no-timing`, one word per file.
verdicts() {
    "$temper" eval "$@" --no-timing >"$work/out" 2>&1
    awk 'NF >= 2 && $1 ~ /\.cl$/ { printf "%s ", $2 }' "$work/out"
}

got=$(verdicts "$stray" "$correct")
# The stray writer's own verdict may be any failure (what its writes hit decides); the correct
# candidates after it must be correct.
case "$got" in
"correct "*) fail "stray writer judged correct: '$got'" ;;
*" correct ") ok "stray writer then a correct candidate: $got" ;;
*) fail "stray writer then a correct candidate: '$got'"; tail -4 "$work/out" ;;
esac
got=$(verdicts "$correct" "$stray" "$correct")
case "$got" in
"correct correct correct ") fail "stray writer judged correct: '$got'" ;;
"correct "*" correct ") ok "correct, stray writer, correct: $got" ;;
*) fail "correct, stray writer, correct: '$got'"; tail -4 "$work/out" ;;
esac

# A tune of the stray writer: its STRAY = 0 configurations are correct, and must be judged so
# whatever ran before them in the same worker.
"$temper" tune "$stray" --strategy random --seed 2 --no-compiler-knobs --retime 1 --screen-budget 0.05 --json \
    >"$work/tune.json" 2>"$work/tune.err"
rows=$(sqlite3 "$TEMPER_HOME/temper.db" "select knobs, verdict from evaluations where knobs like '%STRAY%' order by id" \
    2>/dev/null)
clean=$(printf '%s\n' "$rows" | grep -c '"STRAY": *"0".*|correct$')
zero=$(printf '%s\n' "$rows" | grep -c '"STRAY": *"0"')
dirty=$(printf '%s\n' "$rows" | grep -v '"STRAY": *"0"' | grep -c '|correct$')
if [ "$zero" -ge 2 ] && [ "$clean" = "$zero" ] && [ "$dirty" = 0 ]; then
    ok "tune: $zero configurations with STRAY = 0 correct, every other one not"
else
    fail "tune: $clean of $zero STRAY = 0 configurations correct, $dirty stray ones correct"
    printf '%s\n' "$rows" | sed 's/^/     /'
    tail -5 "$work/tune.err"
fi

# 2. The worker's confinement, tried from inside. The caches must hold a reference library and a
# binary to attack (the evaluations above made them), the caller a secret in its environment and
# a file in its folder.
mkdir -p "$work/caller"
echo "the caller's private notes" >"$work/caller/notes.txt"
secret="s3cret-$$-$RANDOM"
# selftest NAME [ENV...]: runs the self-test with the given settings; prints what got through.
selftest() {
    local name=$1
    shift
    (cd "$work/caller" && env MY_API_TOKEN="$secret" TEMPER_SELFTEST_SECRET="$secret" \
        TEMPER_SELFTEST_FILE="$work/caller/notes.txt" "$@" "$temper" devices --selftest --json \
        >"$work/selftest-$name.json" 2>"$work/selftest-$name.err")
    python3 - "$work/selftest-$name.json" "${REQUIRED:-}" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except ValueError as e:
    print("no report from temper devices --selftest: %s" % e)
    sys.exit(0)
required = [k for k in sys.argv[2].split() if k]
sb = r.get("sandbox", {})
# What each attack needs blocked, by the parts of the sandbox this machine has (the report says
# which hold): an attack is required blocked only where a part that blocks it holds here.
files = sb.get("landlock") or sb.get("mount_namespace")
procs = sb.get("landlock") or sb.get("pid_namespace")
needs = {"parent_environ": procs, "parent_cmdline": procs, "other_processes": procs}
for k in ("write_reference_library", "plant_reference_library", "write_build_cache", "plant_build_cache",
          "read_cache_key", "plant_pocl_cache", "caller_folder_file", "store", "etc_shadow",
          "write_beside_scratch", "write_caller_folder"):
    needs[k] = files
for k in required:
    if k not in r:
        print("%s: not tried" % k)
for k, v in sorted(r.items()):
    if not (isinstance(v, str) and v.startswith("ESCAPED")) or (required and k not in required):
        continue
    if needs.get(k, True):
        print("%s: %s" % (k, v))
    else:
        print("SKIP %s: neither Landlock nor the namespace that blocks it holds here (%s)" % (k, v),
              file=sys.stderr)
PY
}
everything="write_reference_library plant_reference_library write_build_cache plant_build_cache read_cache_key
plant_pocl_cache environment_secret proc_self_environ parent_environ parent_cmdline caller_folder_file store
etc_shadow write_beside_scratch write_caller_folder other_processes signal_parent tgkill_parent tkill_parent
pidfd_signal_parent connect_host_socket network_socket detached_process"
got=$(REQUIRED=$everything selftest all)
if [ -z "$got" ]; then
    ok "selftest: every attack from inside a worker blocked"
else
    fail "selftest: from inside a worker:"
    printf '%s\n' "$got" | sed 's/^/     /'
    tail -3 "$work/selftest-all.err"
fi
# Without Landlock (an older kernel): the mount namespace keeps the caches, the key, the store and
# the caller's folder out of reach, and the filter and the PID namespace the rest.
persist="write_reference_library plant_reference_library write_build_cache plant_build_cache read_cache_key
plant_pocl_cache environment_secret proc_self_environ parent_environ caller_folder_file store write_beside_scratch
write_caller_folder other_processes signal_parent tgkill_parent connect_host_socket detached_process"
got=$(REQUIRED=$persist selftest nolandlock TEMPER_SANDBOX=landlock)
if [ -z "$got" ]; then
    ok "selftest without Landlock: caches, secrets, signals, sockets and processes out of reach"
else
    fail "selftest without Landlock:"
    printf '%s\n' "$got" | sed 's/^/     /'
fi
# Without namespaces (unprivileged user namespaces off): Landlock and the filter alone, and what
# the worker starts dies with its process group.
got=$(REQUIRED=$everything selftest nonamespaces TEMPER_SANDBOX=namespaces)
if [ -z "$got" ]; then
    ok "selftest without namespaces: every attack blocked"
else
    fail "selftest without namespaces:"
    printf '%s\n' "$got" | sed 's/^/     /'
fi

# 3. The caches changed on disk by something without the key.
wrong=$work/wrong_vector_add.cl
cat >"$wrong" <<'CL'
// @temper task vector_add
// @temper launch vector_add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
__kernel void vector_add(__global float *c, __global const float *a, __global const float *b, int N)
{
    int i = get_global_id(0);
    if (i < N)
        c[i] = a[i] - b[i];
}
CL
# In a cache of its own: the baseline's binary (the naive kernel evaluated as a candidate has the
# baseline's source, so the same entry) and the device checks' first, then the wrong kernel's.
export TEMPER_CACHE=$work/cache3
cache=$TEMPER_CACHE
verdicts "$src/tasks/L1/vector_add/naive.cl" >/dev/null
before=$(ls "$cache"/build/*/*.bin 2>/dev/null | sort)
verdicts "$wrong" >/dev/null
wrong_bin=$(comm -13 <(printf '%s\n' "$before") <(ls "$cache"/build/*/*.bin | sort) | head -1)
base_bin=$(for b in $before; do grep -q temper_cmp "$b" || echo "$b"; done | head -1)
cat >"$work/evil_ref.c" <<'C'
void reference(double **out, const double **in, const long long *s)
{
    for (long long i = 0; i < s[0]; i++)
        out[0][i] = in[0][i] - in[1][i];
}
C
n_ref=0
for so in "$cache"/ref/vector_add-*.so; do
    [ -e "$so" ] && cc -shared -fPIC -o "$so" "$work/evil_ref.c" && n_ref=$((n_ref + 1))
done
[ -n "$wrong_bin" ] && [ -n "$base_bin" ] && cp "$wrong_bin" "$base_bin"
got=$(verdicts "$wrong" "$correct")
if [ "$n_ref" -ge 1 ] && [ -n "$wrong_bin" ] && [ -n "$base_bin" ] && [ "$got" = "incorrect correct " ]; then
    ok "reference and baseline binary rewritten without the key: the wrong kernel incorrect, a correct one correct"
else
    fail "reference ($n_ref) and baseline binary (${base_bin:-none} <- ${wrong_bin:-none}) rewritten: '$got'" \
        "(want 'incorrect correct ')"
    tail -4 "$work/out"
fi

# 4. The binary a compile process built ahead (it runs no candidate) is the one the worker looks up:
# a candidate's first evaluation, in a cache of its own, is a build-cache hit in the worker. A
# mismatch between the options the two build with would make every worker build its candidate
# again, unseen but for the time.
TEMPER_CACHE=$work/cache4 "$temper" eval "$wrong" --checks-only --json >"$work/ahead.json" 2>"$work/ahead.err"
hit=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cache_hit"])' "$work/ahead.json" 2>/dev/null)
[ "$hit" = True ] && ok "a candidate built ahead by a compile process is a cache hit in its worker" ||
    fail "first evaluation's cache_hit: '${hit:-none}' (want True) $(tail -2 "$work/ahead.err")"

# 5. A comparison patched from inside the worker: TEMPER_FAULT=forge:1 (src/device/device.h)
# makes the worker's comparisons with the reference pass from the candidate's first launch on, as
# a kernel that patched them would. The calling program compares the outputs the worker handed
# over with the reference's outputs it sent before the kernel ran: the wrong kernel is incorrect,
# saying so, and a correct one after it correct.
TEMPER_FAULT=forge:1 "$temper" eval "$wrong" "$correct" --checks-only --json >"$work/forged.jsonl" 2>"$work/forged.err"
if python3 - "$work/forged.jsonl" <<'PY'; then
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ok = (len(rows) == 2 and rows[0]["verdict"] == "incorrect" and "temper's own comparison" in rows[0]["message"]
      and rows[1]["verdict"] == "correct"
      and not any("outputs_b64" in c for r in rows for c in r.get("checks", [])))
sys.exit(0 if ok else 1)
PY
    ok "a patched comparison: the wrong kernel judged incorrect by the calling program, a correct one correct"
else
    fail "a patched comparison: $(cut -c1-300 "$work/forged.jsonl") $(tail -2 "$work/forged.err")"
fi

rm -rf "$work"
[ $failures = 0 ] && echo "all passed" || echo "$failures failed"
[ $failures = 0 ]
