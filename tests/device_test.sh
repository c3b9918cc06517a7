#!/usr/bin/env bash
# device_test.sh: the device layer through the temper binary on PoCL: `temper devices` reports
# the language and capabilities, and faults injected with TEMPER_FAULT (see src/device/device.h)
# at compile, allocation, launch, a hanging launch and sync give the right verdict with a message
# naming the injected fault, keep every result stored before, and leave the next evaluation of the
# same batch judged normally.
# usage: device_test.sh TEMPER_BINARY SOURCE_DIR
# Exit status: 0 passed, 1 a check failed, 77 no OpenCL device (skipped).
set -u
temper=$1
src=$2
work=$(mktemp -d /tmp/temper-device-XXXXXX)
trap 'rm -rf "$work"' EXIT
export TEMPER_HOME=$work/home TEMPER_CACHE=$work/cache TEMPER_TASKS=$src/tasks
unset TEMPER_FAULT TEMPER_FAULT_ONCE
failures=0

fail() {
    echo "FAIL $*"
    failures=$((failures + 1))
}

if ! "$temper" devices --json >"$work/devices.json" 2>"$work/err" || ! grep -q '"opencl:0"' "$work/devices.json"; then
    echo "SKIP: no OpenCL device"
    exit 77
fi
command -v sqlite3 >/dev/null || { echo "FAIL sqlite3 is not installed (scripts/install-deps.sh installs it)"; exit 1; }

# ---- devices ----
python3 - "$work/devices.json" <<'EOF' || fail "devices --json gives opencl:0 its language, caps, uuid and pci_bus_id"
import json, sys
d = [x for x in json.load(open(sys.argv[1]))["devices"] if x["id"] == "opencl:0"][0]
assert d["language"] == "opencl", d
assert isinstance(d["caps"], list) and "offline_compile" not in d["caps"] and "expert" not in d["caps"], d
# PoCL on this machine runs kernels on the CPU, in the worker's own threads
assert d["class"] != "cpu" or "in_process" in d["caps"], d
assert isinstance(d["uuid"], str) and isinstance(d["pci_bus_id"], str), d
EOF
"$temper" devices >"$work/out" 2>&1
grep -q "language opencl, caps " "$work/out" || fail "devices shows the language and capabilities: $(cat "$work/out")"

# ---- faults ----
# Candidates: the softmax rows kernel, each copy with its own comment so that none is a build cache
# hit and every copy is compiled.
# candidate: sets $cand to a new copy.
n=0
candidate() {
    n=$((n + 1))
    cand=$work/cand$n.cl
    cp "$src/tasks/L1/softmax/rows.cl" "$cand"
    printf '\n// copy %d for device_test.sh\n' "$n" >>"$cand"
}
rows() { sqlite3 "$TEMPER_HOME/temper.db" "select * from evaluations order by id"; }

candidate
first=$cand
"$temper" eval "$first" --no-timing >"$work/out" 2>&1 || fail "a correct kernel before any fault: $(cat "$work/out")"

# scenario FAULT VERDICT EXTRA_OPTIONS...: evaluates a fresh faulty copy and a fresh good copy in
# one batch with TEMPER_FAULT=FAULT, once per run.
scenario() {
    local fault=$1 verdict=$2
    shift 2
    local bad good
    candidate
    bad=$cand
    candidate
    good=$cand
    rows >"$work/before"
    rm -f "$work/once"
    TEMPER_FAULT=$fault TEMPER_FAULT_ONCE=$work/once "$temper" eval "$bad" "$good" --no-timing --json "$@" \
        >"$work/out" 2>"$work/err"
    local status=$?
    [ "$status" -eq 1 ] || fail "$fault: exit $status, expected 1 (one not correct): $(cat "$work/err")"
    [ -e "$work/once" ] || fail "$fault: the fault did not fire"
    python3 - "$work/out" "$bad" "$good" "$fault" "$verdict" <<'EOF' || fail "$fault: verdicts"
import json, sys
out, bad, good, fault, verdict = sys.argv[1:]
results = {}
text, at, decoder = open(out).read(), 0, json.JSONDecoder()
while text[at:].strip():
    while text[at].isspace():
        at += 1
    r, at = decoder.raw_decode(text, at)
    path = r.get("path") or r.get("candidate")
    results[path.get("path") if isinstance(path, dict) else path] = r
assert set(results) == {bad, good}, "results for %s" % sorted(results)
b, g = results[bad], results[good]
name = "injected fault (TEMPER_FAULT=%s)" % fault
assert b["verdict"] == verdict, "the faulty one: %s: %s" % (b["verdict"], b.get("message"))
assert name in b["message"], "the message does not name the fault: " + b["message"]
assert g["verdict"] == "correct", "the next one: %s: %s" % (g["verdict"], g.get("message"))
print("ok   %s: %s (%s), then correct" % (fault, verdict, b["message"]))
EOF
    rows >"$work/after"
    local kept
    kept=$(wc -l <"$work/before")
    if ! head -n "$kept" "$work/after" | cmp -s - "$work/before"; then
        fail "$fault: results stored before the fault changed"
        diff "$work/before" "$work/after" | head -10
    fi
    [ "$(wc -l <"$work/after")" -eq $((kept + 2)) ] ||
        fail "$fault: $(wc -l <"$work/after") rows after, expected $kept + 2"
}

scenario compile:1 compile_error
scenario alloc:1 runtime_error
scenario launch:1 runtime_error
scenario sync:1 runtime_error
scenario hang:1 timeout --launch-timeout 1

# A malformed TEMPER_FAULT is named.
TEMPER_FAULT=explode:1 "$temper" eval "$first" --no-timing >"$work/out" 2>&1
grep -q "TEMPER_FAULT='explode:1'" "$work/out" || fail "a malformed TEMPER_FAULT is named: $(cat "$work/out")"

[ "$failures" -eq 0 ] && echo "PASS: device_test" || echo "$failures failure(s)"
[ "$failures" -eq 0 ]
