#!/usr/bin/env bash
# gpu.sh: everything temper measures on an NVIDIA GPU, in one call of the device machine.
#
#   bench/gpu.sh prepare   here (Debian 12): Release build, binaries copied into .gpu/
#   bench/gpu.sh run       there: GPU tests, calibration, every task's baseline and expert,
#                          throughput of distinct candidates, timing fidelity, deep checks;
#                          logs and JSON under $OUT (or /tmp/temper-gpu), a short table last
set -u
cd "$(dirname "$0")/.."
case "${1:-}" in
prepare)
    set -e
    cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build build-gpu -j"$(nproc)" >/dev/null
    mkdir -p .gpu
    cp build-gpu/temper build-gpu/tests/cases_test build-gpu/tests/baselines_test build-gpu/tests/cuda_smoke \
        build-gpu/tests/cublas_smoke .gpu/
    grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >>.git/info/exclude
    ls -la .gpu
    exit 0
    ;;
run) ;;
*)
    echo "usage: bench/gpu.sh prepare|run" >&2
    exit 2
    ;;
esac

out=${OUT:-/tmp/temper-gpu}
mkdir -p "$out"
work=$(mktemp -d /tmp/temper-gpu-XXXXXX)
export TEMPER_HOME=$work/home TEMPER_CACHE=$work/cache PATH=$PATH:/usr/local/cuda/bin
T=.gpu/temper
summary=$out/summary.txt
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$out/gpu.txt"
note "== smoke tests"
timeout 60 .gpu/cuda_smoke >"$out/cuda_smoke.log" 2>&1; note "cuda_smoke exit $?"
timeout 60 .gpu/cublas_smoke >"$out/cublas_smoke.log" 2>&1; note "cublas_smoke exit $? $(grep -i tflop "$out/cublas_smoke.log" | tr '\n' ' ')"

note "== verdict cases (CUDA)"
timeout 150 .gpu/cases_test cuda tests/cases/cuda tasks >"$out/cases_cuda.log" 2>&1
note "cases_cuda exit $?: $(tail -1 "$out/cases_cuda.log")"
grep -E "^FAIL" "$out/cases_cuda.log" | tee -a "$summary"
note "== baselines against references (CUDA)"
timeout 120 .gpu/baselines_test cuda tasks >"$out/baselines_cuda.log" 2>&1
note "baselines_cuda exit $?: $(tail -1 "$out/baselines_cuda.log")"

note "== calibrate"
timeout 60 $T calibrate --json >"$out/calibrate.json" 2>"$out/calibrate.err"
python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); print("copy %.0f GB/s, read %.0f GB/s, fp32 FMA %.1f TFLOP/s, bf16 GEMM %.0f TFLOP/s" % (c["copy_gbs"], c["read_gbs"], c["fma_gflops"]/1e3, c.get("tensor_bf16_gflops", 0)/1e3))' "$out/calibrate.json" | tee -a "$summary"

note "== baselines, experts and candidates, timed"
timeout 120 $T eval tasks/L1/*/naive.cu tasks/L1/softmax/block.cu tests/cases/cuda/correct_*.cu --json --no-store \
    >"$out/timed.jsonl" 2>"$out/timed.err"

note "== throughput: 200 distinct candidates"
mkdir -p "$work/cands"
for i in $(seq 1 200); do
    { echo "// variant $i: the same kernel, a different source, so no build cache hit"; cat tasks/L1/softmax/block.cu; } \
        >"$work/cands/softmax_$i.cu"
done
start=$(date +%s.%N)
timeout 200 $T eval "$work"/cands/*.cu --json --no-store >"$out/full.jsonl" 2>"$out/full.err"
full_s=$(python3 -c "import time; print(time.time() - $start)")
start=$(date +%s.%N)
timeout 100 $T eval "$work"/cands/*.cu --json --no-store --no-timing >"$out/check.jsonl" 2>"$out/check.err"
check_s=$(python3 -c "import time; print(time.time() - $start)")

note "== timing fidelity: one kernel timed in two runs, and against Nsight Compute"
timeout 60 $T eval tasks/L1/softmax/block.cu --json --no-store >"$out/fid1.json" 2>/dev/null
timeout 90 $T eval tasks/L1/softmax/block.cu --json --no-store --profile >"$out/fid2.json" 2>"$out/fid2.err"
timeout 90 $T eval tasks/L1/vector_add/naive.cu --json --no-store --profile >"$out/fid3.json" 2>"$out/fid3.err"

note "== deep checks"
timeout 120 $T eval tests/cases/cuda/correct_softmax_warp_shuffle.cu --json --no-store --no-timing --sanitize >"$out/san_ok.json" 2>"$out/san_ok.err"
timeout 120 $T eval tests/cases/cuda/missing_syncthreads.cu --json --no-store --no-timing --sanitize >"$out/san_race.json" 2>"$out/san_race.err"

python3 - "$out" "$full_s" "$check_s" <<'PY' | tee -a "$summary"
import json, sys, statistics
out, full_s, check_s = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
def jsonl(path):
    rows = []
    for line in open(path):
        line = line.strip()
        if line:
            try: rows.append(json.loads(line))
            except Exception: pass
    return rows
def load(path):
    try: return json.load(open(path))
    except Exception as e: return {"error": str(e)}
print("\n%-38s %-9s %9s %9s %8s %8s %9s %9s" % ("kernel (bench shape)", "verdict", "ms", "GB/s", "TFLOP/s", "roofline", "base ms", "expert ms"))
for r in jsonl(out + "/timed.jsonl"):
    t = (r.get("timings") or [{}])[0]
    print("%-38s %-9s %9.4g %9.0f %8.2f %7.1f%% %9.4g %9s" % (r["candidate"].replace("tasks/L1/", "").replace("tests/cases/cuda/", "")[:38], r["verdict"], t.get("median_ms", 0),
          t.get("gbps", 0), t.get("tflops", 0), 100 * t.get("roofline_share", 0), t.get("baseline_median_ms", 0),
          "%.4g" % t["expert_median_ms"] if "expert_median_ms" in t else "-"))
full, check = jsonl(out + "/full.jsonl"), jsonl(out + "/check.jsonl")
def verdicts(rows): return {v: sum(1 for r in rows if r["verdict"] == v) for v in set(r["verdict"] for r in rows)}
print("\nthroughput, 200 distinct softmax candidates, one process each way:")
print("  full (cold build cache, timed):  %d results %s in %.1f s = %.0f / min" % (len(full), verdicts(full), full_s, 60 * len(full) / full_s))
print("  check-only (warm build cache):   %d results %s in %.1f s = %.0f / min" % (len(check), verdicts(check), check_s, 60 * len(check) / check_s))
for name, rows in (("full", full), ("check-only", check)):
    if rows:
        keys = ["build", "inputs", "reference", "device", "compare", "timing", "worker"]
        med = {k: statistics.median(r["phases_ms"].get(k, 0) for r in rows) for k in keys}
        print("  %-10s median ms per candidate: elapsed %.1f; " % (name, statistics.median(r["elapsed_ms"] for r in rows)) +
              ", ".join("%s %.1f" % (k, med[k]) for k in keys))
        first = rows[0]["phases_ms"]
        print("  %-10s first candidate (pays inputs and baselines): inputs %.0f ms, reference %.0f ms" % (name, first["inputs"], first["reference"]))
f1, f2, f3 = load(out + "/fid1.json"), load(out + "/fid2.json"), load(out + "/fid3.json")
try:
    m1, m2 = f1["timings"][0]["median_ms"], f2["timings"][0]["median_ms"]
    print("\nfidelity: softmax block.cu median %.4f ms then %.4f ms: ratio %.4f" % (m1, m2, m2 / m1))
except Exception as e:
    print("\nfidelity: runs failed", e)
for f in (f2, f3):
    try:
        p = f["profile"]
        k = p["kernels"][0]
        print("  %s: ncu %.4f ms vs temper %.4f ms: ncu/temper %.4f; DRAM %.0f%%, occupancy %.0f%%, %d registers, local ld/st %d/%d" % (
            f["candidate"], k["duration_ms"], f["timings"][0]["median_ms"], p.get("ncu_over_temper", 0), k.get("dram_throughput_pct", 0),
            k.get("achieved_occupancy_pct", 0), k.get("registers_per_thread", 0), k.get("local_loads", 0), k.get("local_stores", 0)))
    except Exception as e:
        print("  profile failed:", f.get("profile", f.get("error")), e)
for name in ("san_ok", "san_race"):
    s = load(out + "/" + name + ".json")
    print("sanitize %-9s verdict %s: %s" % (name, s.get("verdict"), {k: v.get("errors", v) if isinstance(v, dict) else v for k, v in (s.get("sanitize") or {}).items()}))
PY
tar -czf "$out/logs.tar.gz" -C "$out" --exclude logs.tar.gz --exclude summary.txt . 2>/dev/null
find "$out" -mindepth 1 ! -name logs.tar.gz ! -name summary.txt -delete
rm -rf "$work"
