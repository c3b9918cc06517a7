#!/usr/bin/env bash
# hgemm_profile.sh: Nsight Compute's view of temper's TMA hgemm kernel beside the cuBLAS kernel
# torch.matmul runs, at 8192^3 bf16 on the device machine (after bench/gpu.sh prepare here):
# kernel names, grid and cluster shapes, SM clock, tensor-pipe and memory throughput, one launch
# each. Prints a short table last. Usage: bench/hgemm_profile.sh [temper eval options...]
set -u
cd "$(dirname "$0")/.."
. bench/carry_libs.sh
export TEMPER_TASKS=$PWD/tasks TEMPER_HOME=$(mktemp -d) TEMPER_CACHE=$(mktemp -d)
[ ! -d .gpu/lib ] || carry_libs_link .gpu/lib .gpu/temper .gpu/temper-worker || exit 1
out=${OUT:-/tmp/hgemm-profile}
mkdir -p "$out"
sections="--section SpeedOfLight --section LaunchStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis"
# torch.matmul: the third launch (after warm-up), the GEMM kernel only
timeout 240 ncu --clock-control none $sections --kernel-name regex:'gemm|sm90|cutlass' --launch-skip 2 --launch-count 1 --csv --page details \
    python3 -c '
import torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
for _ in range(4):
    c = a @ b
torch.cuda.synchronize()
' >"$out/torch.csv" 2>"$out/torch.err"
echo "torch ncu exit $?"
# temper's kernel: every hgemm_tma launch of one correctness run; the 8192^3 one is the longest
timeout 300 env TEMPER_SANDBOX_NETWORK=1 ncu --clock-control none $sections --target-processes all --kernel-name hgemm_tma --launch-count 12 --csv --page details \
    .gpu/temper eval tasks/L1/hgemm/tma.cu --no-timing --no-store "$@" >"$out/tma.csv" 2>"$out/tma.err"
echo "tma ncu exit $?"
python3 - "$out/torch.csv" "$out/tma.csv" <<'PY'
import csv, sys
want = ["Duration", "SM Frequency", "Compute (SM) Throughput", "Memory Throughput", "L2 Cache Throughput",
        "DRAM Throughput", "Grid Size", "Block Size", "Cluster Size", "Registers Per Thread",
        "Dynamic Shared Memory Per Block", "Executed Ipc Active", "Waves Per SM", "L1/TEX Hit Rate", "L2 Hit Rate"]
for path in sys.argv[1:]:
    rows = list(csv.DictReader(l for l in open(path) if l.startswith('"')))
    launches = {}
    for r in rows:
        launches.setdefault(r["ID"], {"name": r["Kernel Name"]})[r["Metric Name"]] = (r["Metric Value"], r["Metric Unit"])
    def dur(l):
        v, u = l.get("Duration", ("0", ""))
        try:
            return float(v.replace(",", "")) * {"ms": 1e6, "us": 1e3, "usecond": 1e3, "msecond": 1e6}.get(u, 1)
        except ValueError:
            return 0
    if not launches:
        print(path, "no launches")
        continue
    l = max(launches.values(), key=dur)
    print("==", path.rsplit("/", 1)[-1], l["name"][:150])
    for k in want:
        if k in l:
            print("  %-34s %s %s" % (k, l[k][0], l[k][1]))
PY
