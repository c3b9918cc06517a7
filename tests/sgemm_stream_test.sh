#!/usr/bin/env bash
# sgemm_stream_test.sh: the persistent stream-K SGEMM (tasks/L1/sgemm/stream.cu) and its OpenCL
# twin (stream.cl). CUDA kernels cannot run here, so the twin, which has the same walk of pieces,
# stream-K split, scratch partials, per-tile counts and share-order fixup, with tiled.cl's tiles and
# unchecked interior loads, is judged on every check shape of the task on PoCL (two compute units,
# so SMS = 2: the check shape 1 x 300 x 700 splits a tile over both groups) at knob settings that
# cover each path: the default tiles with the prefetch across pieces (PF=1); BK 8, FAST=0 and no
# prefetch (PF=0, the default); one full round folded into the
# tail (SKW=1); 128x256 and 128x128 tiles; 64x64 tiles, scalar loads, stream-K off. The CUDA kernel
# is compiled for sm_90 by NVRTC at its default and at other settings of each knob, each of which
# its requires must allow, with no spills and at most 255 registers (ptxas -v).
# (tests/sgemm_stream_cpu_test.sh runs the CUDA kernel itself on the CPU.)
# usage: sgemm_stream_test.sh TEMPER_BINARY SOURCE_DIR   (exit 77: neither PoCL nor NVRTC is here)
set -u
temper=$1
src=$2
work=$(mktemp -d /tmp/temper-sgemm-stream-XXXXXX)
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
        "$temper" eval "$sgemm/stream.cl" --device opencl --no-timing --no-store --launch-timeout 60 "${sets[@]}" >"$work/out" 2>&1
        status=$?
        if [ $status -eq 0 ] && grep -q '^verdict *correct' "$work/out"; then
            ok "stream.cl $knobs: correct on every check shape"
        else
            fail "stream.cl $knobs: exit $status"
            tail -8 "$work/out" | sed 's/^/     /'
        fi
    done <<'SETTINGS'
BM=256 BN=128 BK=16 TM=8 TN=16 WX=8 VEC=1 FAST=1 SK=1 SKW=0 PF=1
BM=256 BN=128 BK=8 TM=8 TN=16 WX=4 VEC=1 FAST=0 SK=1 SKW=0 PF=0
BM=256 BN=128 BK=16 TM=8 TN=16 WX=8 VEC=1 FAST=1 SK=1 SKW=1 PF=1
BM=128 BN=256 BK=16 TM=16 TN=8 WX=8 VEC=1 FAST=1 SK=1 SKW=0 PF=1
BM=128 BN=128 BK=16 TM=8 TN=8 WX=4 VEC=1 FAST=1 SK=1 SKW=1 PF=0
BM=64 BN=64 BK=16 TM=4 TN=4 WX=4 VEC=0 FAST=1 SK=0 SKW=0 PF=1
SETTINGS
else
    echo "skip the OpenCL twin: no OpenCL device"
fi

# NVRTC through Python's ctypes, as temper's CUDA backend finds it (dlopen by name).
python3 - "$sgemm/stream.cu" >"$work/nvrtc.out" 2>&1 <<'PY'
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
    "PF=1",
    "SKW=1",
    "SK=0",
    "FAST=0 PF=1",  # FAST=0 at the default PF=0 spills 58 bytes under NVRTC (it runs, slower)
    "BK=8 WX=4",
    "TM=16 TN=8",
    "BM=128 BN=256 TM=16 TN=8",
    "BM=128 BN=128 TN=8",
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
    lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"stream.cu", 0, None, None)
    status = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts]))
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    log = log.value.decode(errors="replace")
    main = log[log.find("entry function 'sgemm_stream'"):]  # the kernel's lines, not sgemm_zero's
    regs = re.search(r"Used (\d+) registers", main)
    spills = re.findall(r"(\d+) bytes spill (?:stores|loads)", main)
    what = " ".join("%s=%d" % kv for kv in knobs.items())
    if allowed and status == 0 and regs and int(regs.group(1)) <= 255 and spills and not any(int(s) for s in spills):
        print("ok   stream.cu %s: compiles for sm_90, %s registers, no spills" % (what, regs.group(1)))
    else:
        failures += 1
        print("FAIL stream.cu %s: requires %s, NVRTC status %d, registers %s, spills %s\n%s"
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
