#!/usr/bin/env bash
# heavy.sh: issue 31's wgmma candidates for the GEMM-family heavy tasks, judged in one call of the device
# machine (the style of bench/gpu.sh; binaries from `bench/gpu.sh prepare` in .gpu/).
#
#   bench/heavy.sh [--quick]    there, from the repository root
#
# For each candidate present (gemm_bias_gelu, int8_gemm, mlp_block, moe_grouped_gemm: tasks/L*/NAME/wgmma.cu),
# in that order, so that a call cut short still has the most important results:
#   (a) `temper eval FILE --json` at its default knobs: the verdict over every check shape, the median ms at
#       the GPU bench shape and, for a failure, its message and first failed check;
#   (c) the PyTorch peer of each task at the same bench shape (bench/heavy_peers.py: CUDA events, a cleaned
#       L2 before every call, the median, as bench/peers.py times them);
#   (b) `temper eval FILE --sanitize`: compute-sanitizer's memcheck, racecheck, initcheck and synccheck on the
#       check shapes (temper's own deep check), while time is left;
#   (d) a table: task, kernel, verdict, ms, peer ms, ratio (peer / kernel), goal and whether it is met.
# --quick does (a) alone. Everything is written to $OUT (or /tmp/temper-heavy) as it happens: heavy.txt
# (what is printed), eval_*.json, san_*.json, peers.json, and logs.tar.gz of the raw files after each step.
# The whole run stays within HEAVY_BUDGET_S (default 540 s): each step's timeout is cut to what is left.
set -u
cd "$(dirname "$0")/.." || exit 1
. bench/carry_libs.sh
export TEMPER_TASKS=${TEMPER_TASKS:-$PWD/tasks}
quick=0
[ "${1:-}" = --quick ] && quick=1
dest=${OUT:-/tmp/temper-heavy}
mkdir -p "$dest"
work=$(mktemp -d /tmp/temper-heavy-XXXXXX)
export TEMPER_HOME=$work/home TEMPER_CACHE=$work/cache PATH=$PATH:/usr/local/cuda/bin
T=.gpu/temper
start=$(date +%s)
budget=${HEAVY_BUDGET_S:-540}
log=$dest/heavy.txt
: >"$log"
note() { echo "$*" | tee -a "$log"; }
left() { echo $((budget - ($(date +%s) - start))); }
# cap SECONDS: SECONDS, or what is left of the budget less a reserve for the table, whichever is less
cap() { local l=$(($(left) - 15)); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
pack() { tar -czf "$dest/logs.tar.gz" -C "$work" --exclude home --exclude cache . 2>/dev/null; }
if [ -d .gpu/lib ] && ! carry_libs_link .gpu/lib $T .gpu/temper-worker >>"$log" 2>&1; then
    note "temper cannot load"
    exit 1
fi
[ -x $T ] || { note "no $T: run bench/gpu.sh prepare first"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee -a "$log"

files=""
for f in tasks/L2/gemm_bias_gelu/wgmma.cu tasks/L2/int8_gemm/wgmma.cu tasks/L3/mlp_block/wgmma.cu \
    tasks/L3/moe_grouped_gemm/wgmma.cu; do
    [ -f "$f" ] && files="$files $f"
done
name_of() { basename "$(dirname "$1")"; }

# (a) verdict and time at the defaults
note "== (a) temper eval at default knobs (every check shape, then the GPU bench shape)"
for f in $files; do
    n=$(name_of "$f")
    t=$(cap 150)
    [ "$t" -gt 20 ] || { note "$n: skipped, the budget is spent"; continue; }
    timeout "$t" $T eval "$f" --json --no-store --time-budget 1 >"$dest/eval_$n.json" 2>"$work/eval_$n.err"
    rc=$?
    python3 - "$dest/eval_$n.json" "$n" "$rc" <<'EOF' | tee -a "$log"
import json, sys
path, name, rc = sys.argv[1:4]
try:
    r = json.load(open(path))
except Exception as e:
    print("%s: no result (exit %s): %s" % (name, rc, e))
    sys.exit(0)
t = (r.get("timings") or [{}])[0]
print("%s: %s, %s ms, %.0f TFLOP/s, vs baseline %.1fx, vs expert %s, exit %s" % (
    name, r.get("verdict"), t.get("median_ms"), t.get("tflops", 0) or 0, t.get("speedup", 0) or 0,
    "%.3fx" % t["speedup_vs_expert"] if t.get("speedup_vs_expert") is not None else "-", rc))
if r.get("verdict") != "correct":
    print("    message: %s" % str(r.get("message"))[:600])
    bad = [c for c in r.get("checks") or [] if not c.get("passed")]
    for c in bad[:3]:
        print("    failed check %s (%s): %s mismatches of %s, first %s" % (c.get("shape"), c.get("seed"),
              c.get("mismatches"), c.get("elements"), json.dumps(c.get("first_mismatch"))[:200]))
if r.get("warnings"):
    print("    warnings: %s" % json.dumps(r["warnings"])[:300])
EOF
    pack
done
[ "$quick" = 1 ] && { note "(--quick: (a) only; $(($(date +%s) - start)) s)"; pack; exit 0; }

# (c) the PyTorch peers at the bench shapes
note "== (c) PyTorch peers at the bench shapes (bench/heavy_peers.py)"
t=$(cap 200)
if [ "$t" -gt 30 ]; then
    timeout "$t" python3 bench/heavy_peers.py --json "$dest/peers.json" 2>"$work/peers.err" | tee -a "$log"
    note "peers exit ${PIPESTATUS[0]} in $(($(date +%s) - start)) s so far"
    tail -3 "$work/peers.err" | tee -a "$log"
else
    note "peers: skipped, the budget is spent"
fi
pack

table() {
    # shellcheck disable=SC2086 # the file names hold no spaces
    python3 - "$dest" $files <<'EOF' | tee -a "$log"
import json, os, sys
dest, files = sys.argv[1], sys.argv[2:]
peers = {}
try:
    peers = {r["task"]: r for r in json.load(open(os.path.join(dest, "peers.json")))["rows"]}
except Exception:
    pass
# the peer each goal names, and the ratio (peer ms / kernel ms) it asks for
goals = {"gemm_bias_gelu": ("compile", 1.0), "int8_gemm": ("int_mm_best", 0.9), "mlp_block": ("eager", 1.0),
         "moe_grouped_gemm": ("grouped_best", 1.0)}
print("%-17s %-10s %-14s %9s %-12s %9s %7s %6s %-8s %s" % ("task", "kernel", "verdict", "ms", "peer", "peer ms",
                                                         "ratio", "goal", "met", "sanitize"))
for f in files:
    name = os.path.basename(os.path.dirname(f))
    try:
        r = json.load(open(os.path.join(dest, "eval_%s.json" % name)))
    except Exception:
        r = {}
    ms = ((r.get("timings") or [{}])[0]).get("median_ms")
    key, goal = goals[name]
    pms = peers.get(name, {}).get(key)
    ratio = pms / ms if ms and pms else None
    met = "-" if ratio is None or r.get("verdict") != "correct" else ("met" if ratio >= goal else "not met")
    san = "-"
    try:
        s = json.load(open(os.path.join(dest, "san_%s.json" % name)))
        tools = s.get("sanitize") or {}
        san = s.get("verdict", "?") + ": " + ", ".join(
            "%s %s%s" % (k[:4], v.get("errors"), "?" if "incomplete" in v else "") for k, v in tools.items()
            if isinstance(v, dict) and "errors" in v)
        rh = (tools.get("racecheck") or {}).get("hazards")
        if rh:
            san += " race hazards %s" % json.dumps(rh)
    except Exception:
        pass
    print("%-17s %-10s %-14s %9s %-12s %9s %7s %5.2fx %-8s %s" % (
        name, os.path.basename(f), r.get("verdict", "no result"), "%.4f" % ms if ms else "-", key,
        "%.4f" % pms if pms else "-", "%.3fx" % ratio if ratio else "-", goal, met, san))
EOF
}
note "== (d) table (before the sanitizer; again at the end)"
table
pack

# (b) compute-sanitizer through temper's --sanitize, while time is left
note "== (b) temper eval --sanitize (memcheck, racecheck, initcheck, synccheck on the check shapes)"
for f in $files; do
    n=$(name_of "$f")
    t=$(cap 150)
    [ "$t" -gt 40 ] || { note "$n: sanitizer skipped, $(left) s left"; continue; }
    timeout "$t" $T eval "$f" --json --no-store --no-timing --sanitize >"$dest/san_$n.json" 2>"$work/san_$n.err"
    rc=$?
    python3 - "$dest/san_$n.json" "$n" "$rc" <<'EOF' | tee -a "$log"
import json, sys
path, name, rc = sys.argv[1:4]
try:
    r = json.load(open(path))
except Exception as e:
    print("%s --sanitize: no result (exit %s): %s" % (name, rc, e))
    sys.exit(0)
s = r.get("sanitize") or {}
print("%s --sanitize: %s, exit %s: %s" % (name, r.get("verdict"), rc, json.dumps(
    {k: ({kk: v.get(kk) for kk in ("errors", "warnings", "hazards", "incomplete") if kk in v}
         if isinstance(v, dict) else v) for k, v in s.items()})[:600]))
if r.get("verdict") != "correct":
    print("    message: %s" % str(r.get("message"))[:400])
for k, v in s.items():
    if isinstance(v, dict) and v.get("errors"):
        print("    %s report: %s" % (k, str(v.get("report"))[:400]))
EOF
    pack
done

note "== (d) table ($(($(date +%s) - start)) s)"
table
pack
