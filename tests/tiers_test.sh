#!/bin/sh
# tiers_test.sh BUILD_DIR SOURCE_DIR: every CTest test is in a tier scripts/test.sh runs. Each has
# a kind label (unit, pocl, gpu, nvrtc, host, gym, agent, fixture) and a tier label (sanitize: the
# ASan/UBSan build; release: the Release build), and no other label; a unit test runs in the
# sanitize tier; a test that evaluates on PoCL takes the run's one calibration (the opencl_ceilings
# fixture) and holds a lock of the CPU device (cpu_device, or cpu_device_TEST: tests/CMakeLists.txt),
# but in the sanitizer build a test of the sanitize tier (two of those run at once there); and
# scripts/test.sh selects each tier by its label.
set -u
build=$1
src=$2
cd "$build" || exit 1
ctest --show-only=json-v1 >tests.json 2>tiers.err || { echo "FAIL ctest --show-only: $(cat tiers.err)"; exit 1; }
sanitize=0
grep -q '^TEMPER_SANITIZE:BOOL=ON$' CMakeCache.txt 2>/dev/null && sanitize=1
python3 - tests.json $sanitize <<'PY' || exit 1
import json, sys
kinds = {"unit", "pocl", "gpu", "nvrtc", "host", "gym", "agent", "fixture"}
tiers = {"sanitize", "release"}
doc = json.load(open(sys.argv[1]))
sanitize_build = sys.argv[2] == "1"
bad = []
for t in doc["tests"]:
    props = {p["name"]: p["value"] for p in t.get("properties", [])}
    labels = set(props.get("LABELS", []))
    name = t["name"]
    if not labels & kinds:
        bad.append(f"{name}: no kind label (one of {sorted(kinds)})")
    if not labels & tiers:
        bad.append(f"{name}: no tier label (sanitize or release): no tier of scripts/test.sh runs it")
    if labels - kinds - tiers:
        bad.append(f"{name}: unknown label(s) {sorted(labels - kinds - tiers)}")
    if "unit" in labels and "sanitize" not in labels:
        bad.append(f"{name}: a unit test outside the sanitize tier")
    if "pocl" in labels:
        locked = any(l == "cpu_device" or l.startswith("cpu_device_") for l in props.get("RESOURCE_LOCK", []))
        if sanitize_build and "sanitize" in labels:
            if locked:
                bad.append(f"{name}: a sanitize-tier PoCL test holding a cpu_device lock in the sanitizer build")
        elif not locked:
            bad.append(f"{name}: evaluates on PoCL without a RESOURCE_LOCK of the CPU device")
        if "opencl_ceilings" not in props.get("FIXTURES_REQUIRED", []):
            bad.append(f"{name}: evaluates on PoCL without the opencl_ceilings fixture")
for b in bad:
    print("FAIL", b)
n = len(doc["tests"])
print(f"ok   {n} tests, each with a kind and a tier" if not bad else f"{len(bad)} problem(s) in {n} tests")
sys.exit(1 if bad else 0)
PY
fails=0
for want in 'release_select="-L release"' 'sanitize_select="-L sanitize"'; do
    if grep -q -- "$want" "$src/scripts/test.sh"; then
        echo "ok   scripts/test.sh runs '$want'"
    else
        echo "FAIL scripts/test.sh does not run '$want'"
        fails=$((fails + 1))
    fi
done
[ $fails -eq 0 ]
