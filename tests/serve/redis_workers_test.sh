#!/usr/bin/env bash
# redis_workers_test.sh: the many-machine gym with real processes on PoCL: a real redis-server (on
# a free loopback port), real `temper worker --redis` processes, jobs submitted through the queue
# (queue_tool) and, when the binary has it, through `temper serve --redis`'s HTTP API:
#   1. a batch gets every result, with the right verdicts; SIGTERM stops a worker cleanly (exit 0,
#      nothing left running);
#   2. kill -9 of a worker in the middle of a job: a second worker claims it after claim_idle_ms,
#      and every job has its result exactly once;
#   3. a kernel that kills its worker every time (TEMPER_TEST_WORKER_DIE_ON: a worker that takes a
#      job whose source holds the marker kills itself with SIGKILL; a supervisor loop restarts
#      it) ends in the dead letters with a runtime_error verdict after max_deliveries deaths while
#      it ran alone, and the other jobs still get theirs;
#   3b. the honest jobs in flight beside that kernel when it kills their worker are re-run alone
#      and answered (correct), never dead-lettered;
#   3c. a worker killed and started again under the same --name re-queues what the dead one held
#      at once (with claim_idle_ms at 10 minutes, nothing else would);
#   4. (temper serve) jobs submitted over HTTP survive kill -9 of the server and a restart.
# Skipped (77) when the binary has no `worker` command or there is no redis-server.
# usage: redis_workers_test.sh TEMPER_BINARY QUEUE_TOOL SOURCE_DIR
set -u
temper=$1
tool=$2
src=$3
here=$(cd "$(dirname "$0")" && pwd)
if ! "$temper" worker --help >/dev/null 2>&1; then
    echo "SKIP: $temper has no worker command (it is built with hiredis and src/serve/consumer.c)"
    exit 77
fi
work=$(mktemp -d /tmp/temper-redis-workers-XXXXXX)
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }
workers=() # pids of the workers and supervisor loops this test started

cleanup() {
    touch "$work/stop"
    for p in "${workers[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for p in "${workers[@]}"; do wait "$p" 2>/dev/null; done
    [ -n "${serve_pid:-}" ] && kill -9 "$serve_pid" 2>/dev/null
    declare -F redis_stop >/dev/null && redis_stop
    rm -rf "$work"
}
trap cleanup EXIT
. "$here/redis_server.sh" "$work"

export TEMPER_HOME=$work/home TEMPER_CACHE=$work/cache
# A private task: vector_add with small shapes, so that each evaluation is quick on PoCL.
task=$work/tasks/L1/serve_add
mkdir -p "$task"
sed -e 's/"name": "vector_add"/"name": "serve_add"/' \
    -e 's/"check": \[.*\]/"check": [{"N": 1}, {"N": 257}, {"N": 4097}]/' \
    -e 's/"cpu": \[{"N": [0-9]*}\]/"cpu": [{"N": 4096}]/' "$src/tasks/L1/vector_add/task.json" >"$task/task.json"
cp "$src/tasks/L1/vector_add/reference.c" "$task/"
for f in naive.cl naive.cu; do
    sed 's/@temper task vector_add/@temper task serve_add/' "$src/tasks/L1/vector_add/$f" >"$task/$f"
done
export TEMPER_TASKS=$work/tasks
good=$task/naive.cl
bad=$work/partial.cl # never writes the last element: incorrect
sed 's/@temper task vector_add/@temper task serve_add/' "$src/tests/cases/opencl/partial_write.cl" >"$bad"
# Correct but slow (work-item 0 spins on a volatile counter at each launch): a job lasts seconds,
# so that a kill lands in the middle of it.
slow=$work/slow.cl
sed -e 's/int i = get_global_id(0);/int i = get_global_id(0);\
    if (i == 0) { volatile int spins = 0; for (int k = 0; k < 200000000; k++) spins++; }/' "$good" >"$slow"
grep -q spins "$slow" || fail "the slow candidate was not made"
marker=TEMPER_TEST_KILLS_ITS_WORKER
killer=$work/killer.cl
{ echo "// $marker"; cat "$good"; } >"$killer"

url="$REDIS_URL/0?prefix=wt&claim_idle_ms=4000&max_deliveries=2"
q() { "$tool" "$url" "$@"; }
field() { python3 -c 'import json,sys; v=json.loads(sys.stdin.readline()); print(eval(sys.argv[1]))' "$1"; }

# start_worker NAME [ENV=VALUE...]: one worker, its pid in workers and $work/NAME.pid
start_worker() {
    local name=$1
    shift
    env "$@" "$temper" worker --redis "$url" --device opencl --in-flight 2 --jobs 1 >"$work/$name.log" 2>&1 &
    workers+=($!)
    echo $! >"$work/$name.pid"
}

# 0. Bad usage: exit 2 with a message naming what is wrong.
usage_case() { # WHAT EXPECTED_TEXT ARGS...
    local what=$1 text=$2
    shift 2
    "$temper" worker "$@" >"$work/usage.out" 2>&1
    local status=$?
    [ $status -eq 2 ] && grep -q -- "$text" "$work/usage.out" && ok "$what: exit 2, says '$text'" ||
        fail "$what: exit $status, $(cat "$work/usage.out")"
}
usage_case "no --redis" "--redis URL is needed"
usage_case "a URL that is not redis://" "redis:// URL" --redis http://127.0.0.1:1
usage_case "--in-flight 0" "--in-flight must be" --redis "$REDIS_URL" --in-flight 0
usage_case "an unknown URL parameter" "unknown parameter 'speed'" --redis "$REDIS_URL/0?speed=9" --device opencl
# Without --device a worker takes only a device whose kernels run apart from it: where the default
# device runs them inside (PoCL on the CPU, as on a machine without a GPU), it does not start
# (exit 3) and names the device to give.
if ! "$temper" devices --json | python3 -c 'import json,sys; d=json.load(sys.stdin)["devices"]
sys.exit(0 if any("error" not in x and "in_process" not in x.get("caps", []) for x in d) else 1)'; then
    "$temper" worker --redis "$REDIS_URL/0?prefix=nodev" --jobs 1 >"$work/nodev.out" 2>&1
    status=$?
    [ $status -eq 3 ] && grep -q -- "inside temper's own process" "$work/nodev.out" &&
        grep -q -- "--device opencl:" "$work/nodev.out" &&
        ok "no --device and only an in-process device: exit 3, naming the device to give" ||
        fail "no --device: exit $status, $(cat "$work/nodev.out")"
fi
# a password in the URL is not echoed in the message (stderr goes to logs)
for u in "redis://gym:s3cretpw@127.0.0.1:1/0?speed=9" "rediss://gym:s3cretpw@127.0.0.1:1"; do
    "$temper" worker --redis "$u" >"$work/usage.out" 2>&1
    status=$?
    [ $status -eq 2 ] && grep -q "redis" "$work/usage.out" && ! grep -q s3cretpw "$work/usage.out" &&
        ok "a bad URL with a password: exit 2, the password not shown" || fail "$u: exit $status, $(cat "$work/usage.out")"
done
# without tasks every job would be judged `invalid` (and cached) for the operator's mistake
usage_case "a task path without tasks" "no tasks under $work/no-tasks-here" --redis "$REDIS_URL" \
    --tasks "$work/no-tasks-here"

# 1. A batch gets every result, with its verdict.
for id in g1 g2 g3; do q submit "$id" "$good" opencl step1 >/dev/null || fail "submit $id"; done
q submit b1 "$bad" opencl step1 >/dev/null || fail "submit b1"
[ "$(q submit g1 "$good" opencl step1)" = existing ] && ok "a resubmitted id is the existing job" ||
    fail "resubmitting g1 queued it again"
start_worker w1
start_worker w2
q wait 300 g1 g2 g3 b1 >"$work/batch.json"
status=$?
[ $status -eq 0 ] && ok "every job of the batch finished" || { fail "the batch did not finish (wait exit $status)"; cat "$work/batch.json" "$work"/w*.log; }
verdicts=$(python3 -c '
import json,sys
print(" ".join(json.loads(l)["id"] + "=" + str((json.loads(l).get("result") or {}).get("verdict")) for l in open(sys.argv[1])))' "$work/batch.json")
[ "$verdicts" = "g1=correct g2=correct g3=correct b1=incorrect" ] && ok "each has its verdict: $verdicts" ||
    fail "verdicts: $verdicts"
n=$(q workers | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
[ "$n" = 2 ] && ok "two workers report themselves" || fail "$n workers report themselves"
# SIGTERM: a clean stop, exit 0, nothing left running
for w in w1 w2; do kill -TERM "$(cat "$work/$w.pid")"; done
for w in w1 w2; do
    wait "$(cat "$work/$w.pid")"
    status=$?
    [ $status -eq 0 ] && ok "$w stopped by SIGTERM exits 0" || { fail "$w exit $status"; cat "$work/$w.log"; }
done
stats=$(q stats)
[ "$(echo "$stats" | field 'v["running"]+v["queued"]')" = 0 ] && [ "$(echo "$stats" | field 'v["done"]')" = 4 ] &&
    ok "four outcomes, nothing running: $stats" || fail "after the batch: $stats"

# 1b. A worker whose task path lacks the job's task (another version of the suite): temper's
# failure, retryable elsewhere, not an `invalid` verdict of the candidate.
"$temper" worker --redis "$url" --device opencl --in-flight 2 --jobs 1 --tasks "$src/tasks" >"$work/wt.log" 2>&1 &
wt=$!
q submit m1 "$good" opencl >/dev/null || fail "submit m1"
q wait 300 m1 >"$work/m1.json" || fail "m1 did not finish"
[ "$(field '(v["status"], v["error"]["kind"], v["error"]["retryable"], "serve_add" in v["error"]["message"])' \
    <"$work/m1.json" 2>/dev/null)" = "('failed', 'temper_error', True, True)" ] &&
    ok "a worker without the job's task fails it (temper_error, retryable), naming the task" ||
    fail "m1 on a worker without its task: $(cat "$work/m1.json")"
kill -TERM $wt
wait $wt

# 2. kill -9 of a worker in the middle of a job: another claims it; one result each.
start_worker w3
killed=
for id in k1 k2 k3; do
    q submit "$id" "$slow" opencl >/dev/null || fail "submit $id"
    for i in $(seq 1 600); do
        st=$(q get "$id" | field 'v["status"]')
        [ "$st" != queued ] && break
        sleep 0.1
    done
    if [ "$st" = running ]; then
        kill -9 "$(cat "$work/w3.pid")"
        wait "$(cat "$work/w3.pid")" 2>/dev/null
        # the kill landed mid-job if the job is still running now that its worker is gone
        [ "$(q get "$id" | field 'v["status"]')" = running ] && killed=$id && break
    fi
    [ "$id" != k3 ] && start_worker w3 # too late (the job finished first): try again with a new job
done
if [ -z "$killed" ]; then
    fail "no kill landed in the middle of a job"
    kill -TERM "$(cat "$work/w3.pid")" 2>/dev/null
    wait "$(cat "$work/w3.pid")" 2>/dev/null
else
    ok "worker killed with SIGKILL while it held $killed"
    start_worker w4
    q wait 300 "$killed" >"$work/claimed.json" || fail "$killed did not finish after its worker was killed"
    [ "$(field 'v["result"]["verdict"]' <"$work/claimed.json" 2>/dev/null)" = correct ] && ok "a second worker claimed $killed and got its verdict" ||
        fail "$killed after the kill: $(cat "$work/claimed.json")"
    stats=$(q stats)
    done_n=$(echo "$stats" | field 'v["done"]')
    submitted=$((4 + ${killed#k}))
    [ "$done_n" = "$submitted" ] && [ "$(echo "$stats" | field 'v["running"]+v["queued"]')" = 0 ] &&
        ok "every job has exactly one outcome ($done_n of $submitted)" || fail "outcomes after the kill: $stats (jobs: $submitted)"
    [ "$(echo "$stats" | field 'v["redeliveries"]')" -ge 1 ] && ok "the claim counts as a redelivery" || fail "no redelivery: $stats"
    kill -TERM "$(cat "$work/w4.pid")"
    wait "$(cat "$work/w4.pid")"
fi

# 3. A kernel that kills its worker every time: dead letters after max_deliveries (2).
# supervise NAME [WORKER OPTIONS]: restarts a worker that dies, as a service manager would, until
# $work/stop (default options: --in-flight 2)
supervise() {
    local name=$1
    shift
    local opts=("$@")
    [ ${#opts[@]} -eq 0 ] && opts=(--in-flight 2)
    (
        trap 'kill -TERM $child 2>/dev/null; wait $child; exit 0' TERM
        while [ ! -e "$work/stop" ]; do
            TEMPER_TEST_WORKER_DIE_ON=$marker "$temper" worker --redis "$url" --device opencl --jobs 1 "${opts[@]}" \
                >>"$work/$name.log" 2>&1 &
            child=$!
            wait $child
        done
    ) &
    workers+=($!)
    supervisors+=($!)
}
supervisors=()
q submit x1 "$killer" opencl >/dev/null || fail "submit x1"
q submit x2 "$good" opencl >/dev/null || fail "submit x2"
supervise s1
supervise s2
q wait 300 x1 x2 >"$work/dead.json" || fail "x1 and x2 did not both finish"
head -1 "$work/dead.json" >"$work/x1.json"
[ "$(field 'v["result"]["verdict"]' <"$work/x1.json")" = runtime_error ] &&
    ok "the kernel that kills its worker has a runtime_error verdict" || fail "x1: $(cat "$work/x1.json")"
field 'v["result"]["message"]' <"$work/x1.json" | grep -q "dead letters" && ok "its message says it went to the dead letters" ||
    fail "x1's message: $(field 'v["result"]["message"]' <"$work/x1.json")"
[ "$(tail -1 "$work/dead.json" | field 'v["result"]["verdict"]')" = correct ] && ok "the other job still gets its verdict" ||
    fail "x2: $(tail -1 "$work/dead.json")"
dead=$(q dead)
[ "$(echo "$dead" | field '[(d["id"], d["deliveries"], d["result"]["verdict"], d["result"]["task"]) for d in v]')" = \
    "[('x1', 3, 'runtime_error', 'serve_add')]" ] &&
    ok "the dead letters hold x1, handed over three times, with its task" || fail "dead letters: $dead"
deaths=$(cat "$work"/s1.log "$work"/s2.log | grep -c "TEMPER_TEST_WORKER_DIE_ON: killing itself with job x1")
# the first death (x1 taken beside others, uncharged), then two while it ran alone (max_deliveries)
[ "$deaths" = 3 ] && ok "x1 killed a worker three times (twice alone), then was not handed over again" ||
    fail "x1 killed $deaths workers"
touch "$work/stop" # the two supervisors stop: the next cases start their own workers
for p in "${supervisors[@]}"; do kill -TERM "$p" 2>/dev/null; done
for p in "${supervisors[@]}"; do wait "$p" 2>/dev/null; done
supervisors=()
rm -f "$work/stop"

# 3b. The honest jobs in flight when a kernel kills their worker: re-run alone, answered, never
# dead-lettered. One worker takes three slow jobs, then the killer, and dies with all four.
for i in 1 2 3; do
    sed "s|^// @temper task|// neighbour $i\n// @temper task|" "$slow" >"$work/nb$i.cl"
    q submit "nb$i" "$work/nb$i.cl" opencl >/dev/null || fail "submit nb$i"
done
sed 's|TEMPER_TEST_KILLS_ITS_WORKER|TEMPER_TEST_KILLS_ITS_WORKER 3b|' "$killer" >"$work/killer3.cl"
q submit x3 "$work/killer3.cl" opencl >/dev/null || fail "submit x3"
supervise s4 --in-flight 4
q wait 600 nb1 nb2 nb3 x3 >"$work/neighbours.json" || fail "nb1, nb2, nb3 and x3 did not all finish"
verdicts=$(python3 -c '
import json,sys
print(" ".join(json.loads(l)["id"] + "=" + str((json.loads(l).get("result") or {}).get("verdict")) for l in open(sys.argv[1])))' "$work/neighbours.json")
[ "$verdicts" = "nb1=correct nb2=correct nb3=correct x3=runtime_error" ] &&
    ok "the jobs beside the killer are answered (correct), the killer is not: $verdicts" || fail "verdicts: $verdicts"
dead=$(q dead)
[ "$(echo "$dead" | field '[d["id"] for d in v]')" = "['x1', 'x3']" ] &&
    ok "only the killers are on the dead letters" || fail "dead letters: $dead"
touch "$work/stop"
for p in "${supervisors[@]}"; do kill -TERM "$p" 2>/dev/null; done
for p in "${supervisors[@]}"; do wait "$p" 2>/dev/null; done
supervisors=()
rm -f "$work/stop"

# 3c. kill -9 of a worker, started again under the same --name: what the dead one held is
# re-queued at once. claim_idle_ms is 10 minutes here: nothing else would hand the job over.
url_named="$REDIS_URL/0?prefix=wn&claim_idle_ms=600000"
named() { # LOG: a worker named gpu-a on $url_named, its pid in $named_pid
    "$temper" worker --redis "$url_named" --device opencl --in-flight 2 --jobs 1 --name gpu-a >"$work/$1.log" 2>&1 &
    named_pid=$!
    workers+=($named_pid)
}
"$tool" "$url_named" submit n1 "$slow" opencl >/dev/null || fail "submit n1"
named na1
for i in $(seq 1 600); do
    [ "$("$tool" "$url_named" get n1 | field 'v["status"]')" = running ] && break
    sleep 0.1
done
kill -9 "$named_pid"
wait "$named_pid" 2>/dev/null
named na2
"$tool" "$url_named" wait 300 n1 >"$work/n1.json"
[ "$(field '(v["status"], v["result"]["verdict"])' <"$work/n1.json" 2>/dev/null)" = "('done', 'correct')" ] &&
    ok "a worker started again under the same --name re-queues the dead one's job: it is answered" ||
    fail "n1 after the restart under the same name: $(cat "$work/n1.json")"
[ "$("$tool" "$url_named" workers | field '[w["consumer"].split("@")[0] for w in v]')" = "['gpu-a']" ] &&
    ok "the dead instance is no longer listed as a worker" || fail "workers: $("$tool" "$url_named" workers)"
kill -TERM "$named_pid"
wait "$named_pid"

# 4. Through temper serve's HTTP API, when this binary has it: kill -9 of the server and a restart
# lose nothing (the jobs are in Redis).
if "$temper" serve --help >/dev/null 2>&1; then
    start_serve() {
        "$temper" serve --listen 127.0.0.1:0 --redis "$url" >"$work/serve.log" 2>&1 &
        serve_pid=$!
        port=
        for i in $(seq 1 200); do
            port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$work/serve.log" | tail -1)
            [ -n "$port" ] && break
            sleep 0.1
        done
    }
    http() { # METHOD PATH [BODY]: prints the status and the body
        python3 - "$port" "$@" <<'EOF'
import sys, urllib.request, urllib.error
port, method, path = sys.argv[1], sys.argv[2], sys.argv[3]
body = sys.argv[4].encode() if len(sys.argv) > 4 else None
req = urllib.request.Request("http://127.0.0.1:%s%s" % (port, path), data=body, method=method,
                             headers={"Content-Type": "application/json"})
try:
    with urllib.request.urlopen(req, timeout=120) as r:
        print(r.status); print(r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code); print(e.read().decode())
EOF
    }
    start_serve
    if [ -z "$port" ]; then
        fail "temper serve --redis did not start: $(cat "$work/serve.log")"
    else
        body=$(python3 -c 'import json,sys; s=open(sys.argv[1]).read(); print(json.dumps({"batch": "http1", "items": [
            {"id": "h%d" % i, "source": s, "lang": "opencl", "options": {"timing": False}} for i in range(3)]}))' "$good")
        reply=$(http POST /v1/evaluations "$body")
        [ "$(echo "$reply" | head -1)" = 202 ] && ok "POST /v1/evaluations queues three jobs (202)" || fail "POST: $reply"
        kill -9 "$serve_pid"
        wait "$serve_pid" 2>/dev/null
        start_serve
        [ -n "$port" ] && ok "the server restarts after kill -9" || fail "no restart: $(cat "$work/serve.log")"
        supervise s3 # a worker for the jobs (the marker is in none of them)
        for i in 0 1 2; do
            reply=$(http GET "/v1/evaluations/h$i?wait_s=60")
            for t in 1 2 3 4; do
                echo "$reply" | tail -1 | grep -q '"status": *"done"' && break
                reply=$(http GET "/v1/evaluations/h$i?wait_s=60")
            done
            echo "$reply" | tail -1 | grep -q '"verdict": *"correct"' && ok "h$i has its result after the server's restart" ||
                fail "h$i: $reply"
        done
        kill -TERM "$serve_pid"
        wait "$serve_pid"
        serve_pid=
    fi
else
    echo "skip 4: $temper has no serve command"
fi

# 5. The queue goes away (Redis stops): an idle worker exits 2, saying so.
touch "$work/stop" # the supervised workers stop first
for p in "${supervisors[@]}"; do kill -TERM "$p" 2>/dev/null; done
for p in "${supervisors[@]}"; do wait "$p" 2>/dev/null; done
start_worker w9
for i in $(seq 1 600); do
    grep -q "takes jobs" "$work/w9.log" && break
    sleep 0.1
done
redis_stop
for i in $(seq 1 600); do
    kill -0 "$(cat "$work/w9.pid")" 2>/dev/null || break
    sleep 0.1
done
wait "$(cat "$work/w9.pid")"
status=$?
[ $status -eq 2 ] && grep -qi "redis" "$work/w9.log" && ok "a worker whose Redis stops exits 2, naming Redis" ||
    { fail "after Redis stopped: exit $status"; tail -3 "$work/w9.log"; }

echo "$failures failure(s)"
[ $failures -eq 0 ]
