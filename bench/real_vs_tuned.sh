#!/usr/bin/env bash
# real_vs_tuned.sh TEMPER [OUT]: the real-kernel set (tests/real/, kernels ported from public code
# bases) and temper's tuned kernels of the same tasks timed in one `temper eval` run, so one
# session, one device state and one call (issue 15: "how temper's tuned kernels compare with them
# in the same call"). Not a test: run on a GPU machine (bench/gpu.sh prepare, then there
# `bench/real_vs_tuned.sh .gpu/temper`); prints a table last, and its JSON lines go to OUT
# (default /tmp/real-vs-tuned).
#
# The tuned kernels are each task's tunable candidate with the knobs and compiler options of its
# best configuration in the session-11 peers call (bench/RESULTS.md, "temper best of ..." under
# "peers"), written into a copy of the file: the knobs fixed to one value, the options as a
# `@temper flags` line.
set -u
cd "$(dirname "$0")/.."
temper=${1:?usage: bench/real_vs_tuned.sh TEMPER [OUT]}
out=${2:-/tmp/real-vs-tuned}
mkdir -p "$out/tuned"
export TEMPER_HOME=${TEMPER_HOME:-$out/home} TEMPER_TASKS=${TEMPER_TASKS:-$PWD/tasks}
# task file | knobs | compiler options (the tune's best, session 11)
tuned="L1/gelu/fast.cu|VEC=8 BLOCK=64 ILP=2 GRID=0 PACK=1|
L1/layernorm/fast.cu|TPR=128 RPB=1 VEC=4 REG=8|--maxrregcount=64
L1/rmsnorm/fast.cu|TPR=128 RPB=1 VEC=8 REG=4 GRID=0 HINT=0|--maxrregcount=64 --use_fast_math -Xptxas -dlcm=cg
L1/softmax/fast.cu|TPR=512 RPB=1 VEC=4 REG=2|--maxrregcount=64
L1/vector_add/fast.cu|VEC=2 BLOCK=64 ILP=2 GRID=0 HINT=0|--maxrregcount=32 --use_fast_math -Xptxas -dscm=cs
L2/add_layernorm/fast.cu|TPR=256 RPB=1 VEC=4 REG=4|--maxrregcount=32 --use_fast_math -Xptxas -dlcm=cg"
files=()
while IFS='|' read -r file knobs flags; do
    task=$(basename "$(dirname "$file")")
    python3 - "tasks/$file" "$out/tuned/$task.cu" "$knobs" "$flags" <<'PY' || exit 1
import re, sys
src, dst, knobs, flags = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].strip()
text = open(src).read()
for kv in knobs:
    name, value = kv.split("=")
    text, n = re.subn(r"^// @temper param %s .+$" % name, "// @temper param %s %s" % (name, value), text, flags=re.M)
    if n != 1:
        sys.exit("%s: no param %s" % (src, name))
if flags:
    text = re.sub(r"^(// @temper task .+)$", r"\1\n// @temper flags " + flags, text, count=1, flags=re.M)
open(dst, "w").write("// the tuned configuration of %s (bench/real_vs_tuned.sh)\n%s" % (src, text))
PY
    files+=("$out/tuned/$task.cu")
    for f in tests/real/"$task"/*.cu; do
        [ -f "$f" ] && files+=("$f")
    done
done <<<"$tuned"
"$temper" eval "${files[@]}" --json --device cuda:0 >"$out/results.jsonl" 2>"$out/eval.err"
echo "temper eval of ${#files[@]} kernels: exit $? ($(wc -l <"$out/results.jsonl") results)"
python3 - "$out/results.jsonl" <<'PY'
import json, os, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
best = {}
for r in rows:
    if "/tuned/" in r["candidate"] and r.get("verdict") == "correct":
        best[r["task"]] = r["timings"][0]["median_ms"]
print("| kernel | task | verdict | median ms | vs the task's baseline | temper tuned ms | tuned faster by |")
print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
for r in rows:
    t = (r.get("timings") or [{}])[0]
    ms, sp = t.get("median_ms"), t.get("speedup")
    name = "temper tuned (%s)" % os.path.basename(r["candidate"]) if "/tuned/" in r["candidate"] else \
        r["candidate"].split("tests/real/", 1)[-1]
    tb = best.get(r["task"])
    print("| %s | %s | %s | %s | %s | %s | %s |" % (
        name, r["task"], r["verdict"], "%.4g" % ms if ms else "-", "%.2fx" % sp if sp else "-",
        "%.4g" % tb if tb else "-", "%.2fx" % (ms / tb) if ms and tb else "-"))
PY
