#!/usr/bin/env bash
# gemm_profile.sh: Nsight Compute's view of a temper GEMM kernel beside the cuBLAS kernel
# torch.matmul runs on the same shape, on the device machine (after bench/gpu.sh prepare here):
# kernel names, grid and cluster shapes, SM clock, throughputs, issue-slot use and the warps' stall
# reasons, one launch each. Prints a short table last.
#   bench/gemm_profile.sh hgemm [temper eval options...]   tasks/L1/hgemm/tma.cu at 8192^3 bf16
#   bench/gemm_profile.sh sgemm [temper eval options...]   tasks/L1/sgemm/tma.cu at 4096^3 fp32
#                                                          (torch with TF32 off, as the task wants)
#   PROFILE_FILE=F PROFILE_KERNEL=K: another candidate of the task and its kernel's name
# (session 12 ran it as bench/hgemm_profile.sh, for hgemm alone)
set -u
cd "$(dirname "$0")/.."
. bench/carry_libs.sh
export TEMPER_TASKS=$PWD/tasks TEMPER_HOME=$(mktemp -d) TEMPER_CACHE=$(mktemp -d)
[ ! -d .gpu/lib ] || carry_libs_link .gpu/lib .gpu/temper .gpu/temper-worker || exit 1
task=${1:-hgemm}
shift || true
case $task in
hgemm) n=8192 dtype=bfloat16 file=tasks/L1/hgemm/tma.cu kernel=hgemm_tma ;;
sgemm) n=4096 dtype=float32 file=tasks/L1/sgemm/tma.cu kernel=sgemm_tma ;;
*)
    echo "gemm_profile.sh: unknown task '$task' (hgemm or sgemm)" >&2
    exit 2
    ;;
esac
file=${PROFILE_FILE:-$file} kernel=${PROFILE_KERNEL:-$kernel}
out=${OUT:-/tmp/gemm-profile}
mkdir -p "$out"
sections="--section SpeedOfLight --section LaunchStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section SchedulerStats --section WarpStateStats"
# the warps' stall reasons, cycles per issued instruction each
stalls=$(for r in short_scoreboard long_scoreboard barrier mio_throttle math_pipe_throttle wait not_selected dispatch_stall lg_throttle no_instruction; do
    printf 'smsp__average_warps_issue_stalled_%s_per_issue_active.ratio,' "$r"
done)
sections="$sections --metrics ${stalls%,}"
# torch.matmul: the third launch (after warm-up), the GEMM kernel only
timeout 240 ncu --clock-control none $sections --kernel-name regex:'gemm|sm90|cutlass|sgemm' --launch-skip 2 --launch-count 1 --csv --page details \
    python3 -c '
import sys, torch
torch.backends.cuda.matmul.allow_tf32 = False
n, dt = int(sys.argv[1]), getattr(torch, sys.argv[2])
a = torch.randn(n, n, device="cuda", dtype=dt)
b = torch.randn(n, n, device="cuda", dtype=dt)
for _ in range(4):
    c = a @ b
torch.cuda.synchronize()
' "$n" "$dtype" >"$out/torch.csv" 2>"$out/torch.err"
echo "torch ncu exit $?"
# temper's kernel: the first LAUNCHES (100) launches of one correctness run, which reach the bench
# shape's (the most block-time, the one shown; the check shapes' come first, two seeds each)
timeout 300 env TEMPER_SANDBOX_NETWORK=1 ncu --clock-control none $sections --target-processes all --kernel-name "$kernel" --launch-count ${LAUNCHES:-100} --csv --page details \
    .gpu/temper eval "$file" --no-timing --no-store "$@" >"$out/temper.csv" 2>"$out/temper.err"
echo "temper ncu exit $?"
python3 - "$out/torch.csv" "$out/temper.csv" <<'PY'
import csv, sys
want = ["Duration", "SM Frequency", "Compute (SM) Throughput", "Memory Throughput", "L2 Cache Throughput",
        "DRAM Throughput", "Grid Size", "Block Size", "Cluster Size", "Registers Per Thread",
        "Dynamic Shared Memory Per Block", "Executed Ipc Active", "Issue Slots Busy", "Issued Warp Per Scheduler",
        "No Eligible", "Active Warps Per Scheduler", "Eligible Warps Per Scheduler",
        "Warp Cycles Per Issued Instruction", "Waves Per SM", "L1/TEX Hit Rate", "L2 Hit Rate",
        "L1/TEX Cache Throughput"]
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
    def grid(l):
        try:
            return int(l.get("Grid Size", ("0", ""))[0].replace(",", ""))
        except ValueError:
            return 0
    # the bench shape's launch: the most block-time (grid times duration; a check shape such as
    # 2 x 3 x 65537 runs longer, on one block, and 3 x 65537 x 2 has more blocks, briefly)
    l = max(launches.values(), key=lambda l: grid(l) * dur(l))
    print("==", path.rsplit("/", 1)[-1], l["name"][:150])
    for k in want:
        if k in l:
            print("  %-34s %s %s" % (k, l[k][0], l[k][1]))
    for k in sorted(l):
        if "issue_stalled" in k:
            print("  stall %-28s %s" % (k.split("issue_stalled_")[1].split("_per_issue")[0], l[k][0]))
PY
