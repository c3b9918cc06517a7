# lib.sh: what the agent's tests share: a work folder, ok/fail counting, the scripted model
# server (tests/agent/fake_model.py, the tests' only stand-in: no language model runs here) on a
# free loopback port, and a script's reply entries built from kernel files. Sourced with
# temper, src set.
work=$(mktemp -d /tmp/temper-agent-XXXXXX)
export TEMPER_HOME=$work/home TEMPER_CACHE=$work/cache TEMPER_TASKS=$src/tasks TEMPER_KNOWLEDGE=$src/knowledge
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }
server_pid=
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
    [ -n "${TEMPER_TEST_KEEP:-}" ] && echo "kept $work" || rm -rf "$work"
}
trap cleanup EXIT
command -v python3 >/dev/null || { echo "SKIP: python3 is needed for the scripted model server"; exit 77; }
command -v sqlite3 >/dev/null || { echo "SKIP: sqlite3 is needed to read the store"; exit 77; }
"$temper" devices 2>/dev/null | grep -q opencl || { echo "SKIP: no OpenCL device (PoCL)"; exit 77; }

# start_server SCRIPT: starts the scripted model; sets port and log.
servers=0
start_server() {
    servers=$((servers + 1))
    log=$work/server-$servers.log
    rm -f "$work/port"
    python3 "$src/tests/agent/fake_model.py" --script "$1" --port-file "$work/port" --log "$log" &
    server_pid=$!
    for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
    port=$(cat "$work/port" 2>/dev/null)
    [ -n "$port" ] || { echo "FAIL the scripted model server did not start"; exit 1; }
}
stop_server() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
    server_pid=
}
db=$TEMPER_HOME/temper.db
