#!/usr/bin/env bash
# mcp_test.sh: `temper mcp` driven over a pipe through whole conversations in both protocol eras
# on OpenCL (tests/mcp/conversation_test.py, with tests/mcp/driver.py checking that every byte on
# its standard output is JSON-RPC). Skipped (77) without python3 or an OpenCL device.
# usage: mcp_test.sh TEMPER_BINARY SOURCE_DIR
set -u
temper=$1
src=$2
python=$(command -v python3 || true)
if [ -z "$python" ]; then
    echo "SKIP: python3 is not installed (scripts/install-deps.sh installs it)"
    exit 77
fi
work=$(mktemp -d /tmp/temper-mcp-XXXXXX)
trap 'rm -rf "$work"' EXIT
if ! TEMPER_HOME=$work/probe "$temper" devices 2>/dev/null | grep -q 'opencl:0'; then
    echo "SKIP: no OpenCL device (the conversations evaluate OpenCL candidates)"
    exit 77
fi
# A device that is no device kind is bad usage at start (exit 2, nothing on stdout).
"$temper" mcp --device foo </dev/null >"$work/foo.out" 2>"$work/foo.err"
status=$?
if [ $status -ne 2 ] || [ -s "$work/foo.out" ] || ! grep -q "not cuda\[:N\] or opencl\[:N\]" "$work/foo.err"; then
    echo "FAIL: mcp --device foo: exit $status, $(cat "$work/foo.err")"
    exit 1
fi
# A store in a folder that does not exist: said at start, not at each call.
"$temper" mcp --store "$work/no/such/dir/t.db" </dev/null >"$work/store.out" 2>"$work/store.err"
status=$?
if [ $status -ne 2 ] || [ -s "$work/store.out" ] || ! grep -q "its folder $work/no/such/dir does not exist" "$work/store.err"; then
    echo "FAIL: mcp --store in a missing folder: exit $status, $(cat "$work/store.err")"
    exit 1
fi
if ! "$python" "$src/tests/mcp/conversation_test.py" --temper "$temper" --tasks "$src/tasks" --work "$work"; then
    echo "FAIL: the conversation above; the server's standard error:"
    tail -40 "$work/mcp.stderr" | sed 's/^/     /'
    exit 1
fi
