#!/usr/bin/env bash
# sgemm_pipe_test.sh: the pipelined SGEMM (tasks/L1/sgemm/pipe.cu) and its OpenCL twin (pipe.cl).
# CUDA kernels cannot run here, so the twin, which has the same tiles, ring of NS stages, register
# fragments, read of the next tile's first fragment before the barrier, unchecked interior loads
# and zero-filled edges, is judged on every check shape of the task (and the CPU bench shape,
# 256^3, where 256x128 tiles lie inside the matrices and FAST's unchecked loads run) on PoCL at
# knob settings that cover each path: the CUDA default, two stages (the first read after the
# barrier), four stages, BK 8, FAST=0, chunks of 4 and 2 k rows (KU), 16x8 and 4x4 per work-item,
# 4 lanes along N. The CUDA kernel
# is compiled for sm_90 by NVRTC at its default and at the alternatives its header names, each of
# which its requires must allow, with no spills and at most 255 registers (ptxas -v).
# usage: sgemm_pipe_test.sh TEMPER_BINARY SOURCE_DIR   (exit 77: neither PoCL nor NVRTC is here)
set -u
temper=$1
src=$2
work=$(mktemp -d /tmp/temper-sgemm-pipe-XXXXXX)
export TEMPER_HOME=$work/home TEMPER_TASKS=$src/tasks
failures=0
ran=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }
sgemm=$src/tasks/L1/sgemm

if "$temper" devices 2>/dev/null | grep -q '^opencl'; then
    ran=1
    while read -r knobs; do
        sets=()
        for kv in $knobs; do sets+=(--set "$kv"); done
        # A 256x128 tile at K = 65,537 is 2^31 FMAs for one work-group: seconds on a busy CPU, so the
        # launch limit is raised (what is tested is the result, not the speed).
        "$temper" eval "$sgemm/pipe.cl" --device opencl --no-timing --no-store --launch-timeout 60 "${sets[@]}" >"$work/out" 2>&1
        status=$?
        if [ $status -eq 0 ] && grep -q '^verdict *correct' "$work/out"; then
            ok "pipe.cl $knobs: correct on every check shape"
        else
            fail "pipe.cl $knobs: exit $status"
            tail -8 "$work/out" | sed 's/^/     /'
        fi
    done <<'SETTINGS'
BM=256 BN=128 BK=16 TM=8 TN=16 WX=8 NS=3 FAST=1 KU=0
BM=256 BN=128 BK=16 TM=8 TN=16 WX=8 NS=2 FAST=1 KU=4
BM=128 BN=128 BK=8 TM=8 TN=16 WX=4 NS=4 FAST=1 KU=2 CP=1 ZZ=0
BM=128 BN=256 BK=8 TM=16 TN=8 WX=4 NS=3 FAST=0 KU=0 CP=1
BM=64 BN=64 BK=16 TM=4 TN=4 WX=8 NS=3 FAST=1 KU=4 ZZ=0
BM=64 BN=64 BK=8 TM=4 TN=4 WX=4 NS=2 FAST=0 KU=2
SETTINGS
else
    echo "skip the OpenCL twin: no OpenCL device"
fi

# NVRTC through Python's ctypes, as temper's CUDA backend finds it (dlopen by name).
python3 - "$sgemm/pipe.cu" >"$work/nvrtc.out" 2>&1 <<'PY'
import ctypes, re, sys

path = sys.argv[1]
source = open(path).read()
lib = None
for name in ("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so"):
    try:
        lib = ctypes.CDLL(name)
        break
    except OSError:
        pass
if lib is None:
    print("SKIP no NVRTC")
    sys.exit(77)
requires = re.findall(r"^// @temper require (.*)$", source, re.M)
params = {m[0]: m[1].split() for m in re.findall(r"^// @temper param (\w+) (.*)$", source, re.M)}
settings = [
    "",  # every knob at its first value: the default the tuner starts from
    "NS=2",
    "BK=8",
    "KU=4",
    "BK=8 NS=2 ZZ=0",
    "CP=1",
    "CP=1 NS=4 BK=8",
    "CP=1 NS=4 KU=4 FAST=0",
    "TM=16 TN=8",
    "BM=128 BN=128 BK=8",
    "BM=128 BN=128 TN=8",
    "BM=128 BN=256 TM=16 TN=8 FAST=0",
]
failures = 0
for setting in settings:
    knobs = {k: int(v[0]) for k, v in params.items()}
    for kv in setting.split():
        k, v = kv.split("=")
        assert k in params, "no knob %s" % k
        knobs[k] = int(v)
    allowed = all(eval(r.replace("&&", " and ").replace("||", " or ").replace("/", "//"), {}, dict(knobs))
                  for r in requires)
    opts = ["-arch=sm_90", "-Xptxas", "-v"] + ["-D%s=%d" % kv for kv in knobs.items()]
    prog = ctypes.c_void_p()
    lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"pipe.cu", 0, None, None)
    status = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts]))
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    log = log.value.decode(errors="replace")
    regs = re.search(r"Used (\d+) registers", log)
    spills = re.findall(r"(\d+) bytes spill (?:stores|loads)", log)
    what = " ".join("%s=%d" % kv for kv in knobs.items())
    if allowed and status == 0 and regs and int(regs.group(1)) <= 255 and spills and not any(int(s) for s in spills):
        print("ok   pipe.cu %s: compiles for sm_90, %s registers, no spills" % (what, regs.group(1)))
    else:
        failures += 1
        print("FAIL pipe.cu %s: requires %s, NVRTC status %d, registers %s, spills %s\n%s"
              % (what, "hold" if allowed else "refuse it", status, regs and regs.group(1), spills, log[-1500:]))
sys.exit(1 if failures else 0)
PY
status=$?
cat "$work/nvrtc.out"
if [ $status -eq 77 ]; then
    echo "skip the CUDA kernel: no NVRTC"
else
    ran=1
    [ $status -eq 0 ] || failures=$((failures + 1))
fi

rm -rf "$work"
[ $ran -eq 1 ] || { echo "SKIP: neither an OpenCL device nor NVRTC"; exit 77; }
[ $failures -eq 0 ] && echo "all passed" || echo "$failures failed"
[ $failures -eq 0 ]
