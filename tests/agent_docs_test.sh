#!/usr/bin/env bash
# agent_docs_test.sh: the committed example prompts (docs/examples/agent-softmax-opencl.txt) are
# still what `temper agent softmax --dry-run` prints (on a fresh store, with the guides of
# knowledge/; the device section, which names this machine's device, is left out of the
# comparison); a dry run calls no model and records nothing; `temper knowledge search` finds the
# guides and says so in its exit status; the agent's usage errors exit 2.
# usage: agent_docs_test.sh TEMPER_BINARY SOURCE_DIR
set -u
temper=$1
src=$2
. "$src/tests/agent/lib.sh"

example=$src/docs/examples/agent-softmax-opencl.txt
"$temper" agent softmax --dry-run --device opencl >"$work/dry.txt" 2>"$work/dry.err"
status=$?
[ $status -eq 0 ] && ok "--dry-run exits 0" || { fail "--dry-run exit $status"; cat "$work/dry.err"; }
no_device() { awk '/^## /{skip = ($0 == "## device")} !skip' "$1"; }
if diff <(no_device "$example") <(no_device "$work/dry.txt") >"$work/diff"; then
    ok "docs/examples/agent-softmax-opencl.txt is what --dry-run prints"
else
    fail "the example prompts differ from --dry-run's; regenerate with: TEMPER_HOME=\$(mktemp -d)" \
        "TEMPER_KNOWLEDGE=knowledge TEMPER_TASKS=tasks temper agent softmax --dry-run --device opencl > $example"
    head -20 "$work/diff"
fi
for section in task device "current best" "kernel to start from" "retrieved examples" plan target "output contract"; do
    grep -q "^## $section\$" "$work/dry.txt" || fail "the prompts lack the section '$section'"
done
grep -q "^### guide: OpenCL on CPUs" "$work/dry.txt" && ok "the prompts carry the retrieved OpenCL-on-CPUs guide" ||
    fail "no retrieved guide in the prompts"
sessions=$(sqlite3 "$db" "select count(*) from agent_sessions" 2>/dev/null)
[ "${sessions:-0}" = 0 ] && ok "a dry run records no session" || fail "a dry run recorded $sessions sessions"
"$temper" agent softmax --dry-run --device opencl --constraint "keep local memory under 16 KB" | grep -q "^- keep local memory under 16 KB" &&
    ok "a --constraint is carried by the prompts" || fail "the constraint is not in the prompts"

"$temper" knowledge search barrier local memory cpu --no-store >"$work/k.txt"
status=$?
[ $status -eq 0 ] && head -1 "$work/k.txt" | grep -q "guide: OpenCL on CPUs" && ok "knowledge search ranks the CPU guide first" ||
    { fail "knowledge search: exit $status"; head -3 "$work/k.txt"; }
"$temper" knowledge search wgmma --no-store --json | python3 -c "
import json, sys
h = json.load(sys.stdin)
sys.exit(0 if h and h[0]['ref'] == 'knowledge/hopper-tma-wgmma.md' and h[0]['kind'] == 'guide' else 1)" &&
    ok "knowledge search --json finds the Hopper guide" || fail "knowledge search --json for wgmma"
"$temper" knowledge search xylophone --no-store >/dev/null
status=$?
[ $status -eq 1 ] && ok "nothing found: exit 1" || fail "nothing found: exit $status"
# A guides folder that is not there, and a language that is not one: exit 2, saying what.
TEMPER_KNOWLEDGE=$work/no-such-folder "$temper" knowledge search tiling --no-store >/dev/null 2>"$work/kerr"
[ $? -eq 2 ] && grep -q "no guides folder at $work/no-such-folder" "$work/kerr" &&
    ok "knowledge search without its guides folder: exit 2, naming it" || fail "no guides folder: $(cat "$work/kerr")"
"$temper" knowledge search tiling --no-store --lang fortran >/dev/null 2>"$work/kerr"
[ $? -eq 2 ] && grep -q "'fortran' is not a language" "$work/kerr" && ok "knowledge search --lang fortran: exit 2" ||
    fail "--lang fortran: $(cat "$work/kerr")"
"$temper" knowledge serch tiling >/dev/null 2>"$work/kerr"
[ $? -eq 2 ] && grep -q "'serch' is not a subcommand (search)" "$work/kerr" && ok "knowledge serch: exit 2, says so" ||
    fail "knowledge serch: $(cat "$work/kerr")"
"$temper" knowledge search tiling --no-store --task no_such_task >/dev/null 2>"$work/kerr"
[ $? -eq 2 ] && grep -q "no task named 'no_such_task'" "$work/kerr" && ok "knowledge search --task no_such_task: exit 2" ||
    fail "--task no_such_task: $(cat "$work/kerr")"
TEMPER_KNOWLEDGE=$work/no-such-folder "$temper" agent softmax --dry-run --device opencl >/dev/null 2>"$work/kerr"
[ $? -eq 0 ] && grep -q "warning: no guides folder" "$work/kerr" && ok "agent --dry-run without guides warns" ||
    fail "agent without guides: $(cat "$work/kerr")"
"$temper" knowledge search --no-store -- "!!" >/dev/null 2>&1
status=$?
[ $status -eq 2 ] && ok "a query without words: exit 2" || fail "a query without words: exit $status"
for_prompt=$("$temper" knowledge search tiling --no-store --prompt --limit 1)
[ "$(printf '%s\n' "$for_prompt" | head -1)" = "### guide: Tiling for data reuse (GEMM, convolution, attention) (knowledge/tiling.md)" ] &&
    ok "--prompt prints the section as a prompt carries it" || fail "--prompt: $(printf '%s\n' "$for_prompt" | head -1)"

"$temper" agent softmax >/dev/null 2>"$work/usage.err"
status=$?
[ $status -eq 2 ] && grep -q -- "--endpoint" "$work/usage.err" && ok "no endpoint: exit 2, named" || fail "no endpoint: exit $status"
"$temper" agent softmax --endpoint ftp://x --model m --device opencl >/dev/null 2>"$work/usage.err"
status=$?
[ $status -eq 2 ] && grep -q "not an http" "$work/usage.err" && ok "a bad endpoint: exit 2, named" || fail "bad endpoint: exit $status"
"$temper" agent no_such_task --dry-run --device opencl >/dev/null 2>"$work/usage.err"
status=$?
[ $status -eq 2 ] && ok "an unknown task: exit 2" || fail "unknown task: exit $status"
"$temper" agent softmax --dry-run --device cuda >/dev/null 2>&1
status=$?
"$temper" devices 2>/dev/null | grep -q "^cuda:" || { [ $status -eq 3 ] && ok "no CUDA device: exit 3" || fail "no CUDA device: exit $status"; }
[ $failures -eq 0 ] || { echo "$failures failures"; exit 1; }
