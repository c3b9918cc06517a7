#!/usr/bin/env bash
# agent_stops_test.sh: `temper agent` stops at its token limit, its cost limit and a plateau, on
# PoCL against a scripted model server (tests/agent/fake_model.py, the only stand-in: no
# language model runs here), each stop named in the summary; an endpoint that never answers is
# bad input (exit 2) with the connection error named.
# usage: agent_stops_test.sh TEMPER_BINARY SOURCE_DIR
set -u
temper=$1
src=$2
. "$src/tests/agent/lib.sh"

python3 "$src/tests/agent/make_script.py" "$work/script.json" "$src/tests/agent/kernels" "$src/tasks" '{
 "defaults": {"planner": {"content": "Plan."}, "coder": {"content": "A reply without a kernel."}}
}'
start_server "$work/script.json"
run() { # run NAME OPTIONS...: the stop reason and the kernels written
    local name=$1
    shift
    "$temper" agent softmax --device opencl --endpoint "http://127.0.0.1:$port/v1" --model scripted --no-timing \
        --budget 50 --json "$@" >"$work/$name.json" 2>"$work/$name.err"
    echo "$? $(python3 -c "import json; d = json.load(open('$work/$name.json')); print(d['kernels'], d['stop_reason'])" 2>/dev/null)"
}
got=$(run tokens --max-total-tokens 100 --plateau 50)
[ "$got" = "1 1 the token limit (100) was reached" ] && ok "the token limit stops the loop" || fail "tokens: '$got'"
got=$(run cost --max-cost 0.001 --price-in 1 --price-out 1 --plateau 50)
[ "$got" = "1 1 the cost limit (0.001) was reached" ] && ok "the cost limit stops the loop" || fail "cost: '$got'"
got=$(run plateau --plateau 3)
[ "$got" = "1 3 a plateau: 3 kernels without a better one" ] && ok "a plateau stops the loop" || fail "plateau: '$got'"
stop_server

# nothing listens on the port now: the endpoint never answers
"$temper" agent softmax --device opencl --endpoint "http://127.0.0.1:$port/v1" --model scripted --no-timing \
    --retries 1 --backoff 0.01 >/dev/null 2>"$work/down.err"
status=$?
[ $status -eq 2 ] && grep -q "127.0.0.1:$port" "$work/down.err" && ok "an endpoint that never answers: exit 2, named" ||
    fail "endpoint down: exit $status, $(tail -1 "$work/down.err")"
[ $failures -eq 0 ] || { echo "$failures failures"; exit 1; }
