# sgemm_twin_lib.sh: what the SGEMM candidates' tests share (sourced by sgemm_async_test.sh,
# sgemm_pipe_test.sh, sgemm_stream_test.sh, sgemm_tma_test.sh). CUDA kernels cannot run here, so a
# candidate's OpenCL twin is judged on every check shape of the task on PoCL at each of
# OPENCL_SETTINGS (one knob set a line; the CUDA default first; empty for a candidate with no twin),
# and the CUDA kernel is compiled by NVRTC, for the architecture its `@temper flags` name (else
# sm_90), at its default and at each of NVRTC_SETTINGS (one knob change a line, over the defaults),
# each of which its requires must allow, with no spills and within the registers its blocks leave:
# 255, or with a MINB knob (__launch_bounds__'s blocks per SM) 65536 / (threads * MINB) (ptxas -v,
# read from the kernel's own lines of the log).
#   sgemm_twin_check TEMPER_BINARY SOURCE_DIR NAME KERNEL   (exit status: 0 passed, 1 failed, 77
#                                                           neither PoCL nor NVRTC is here)
# NAME: tasks/L1/sgemm/NAME.cl and NAME.cu; KERNEL: the .cu's kernel whose registers count.

sgemm_twin_check() {
    local temper=$1 src=$2 name=$3 kernel=$4
    local work failures=0 ran=0 sgemm=$src/tasks/L1/sgemm status knobs kv
    work=$(mktemp -d "/tmp/temper-sgemm-$name-XXXXXX")
    export TEMPER_HOME=$work/home TEMPER_TASKS=$src/tasks

    if [ -z "$OPENCL_SETTINGS" ]; then
        echo "no OpenCL twin to run"
    elif "$temper" devices 2>/dev/null | grep -q '^opencl'; then
        ran=1
        while read -r knobs; do
            [ -n "$knobs" ] || continue
            local sets=()
            for kv in $knobs; do sets+=(--set "$kv"); done
            # A 256x128 tile at K = 65,537 is 2^31 FMAs for one work-group: seconds on a busy CPU, so
            # the launch limit is raised (what is tested is the result, not the speed).
            "$temper" eval "$sgemm/$name.cl" --device opencl --no-timing --no-store --launch-timeout 60 "${sets[@]}" \
                >"$work/out" 2>&1
            status=$?
            if [ $status -eq 0 ] && grep -q '^verdict *correct' "$work/out"; then
                echo "ok   $name.cl $knobs: correct on every check shape"
            else
                echo "FAIL $name.cl $knobs: exit $status"
                failures=$((failures + 1))
                tail -8 "$work/out" | sed 's/^/     /'
            fi
        done <<<"$OPENCL_SETTINGS"
    else
        echo "skip the OpenCL twin: no OpenCL device"
    fi

    # NVRTC through Python's ctypes, as temper's CUDA backend finds it (dlopen by name).
    python3 - "$sgemm/$name.cu" "$kernel" "$NVRTC_SETTINGS" >"$work/nvrtc.out" 2>&1 <<'PY'
import ctypes, os, re, sys

path, kernel, more = sys.argv[1], sys.argv[2], sys.argv[3]
name = os.path.basename(path)
source = open(path).read()
lib = None
for soname in ("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so"):
    try:
        lib = ctypes.CDLL(soname)
        break
    except OSError:
        pass
if lib is None:
    print("SKIP no NVRTC")
    sys.exit(77)
requires = re.findall(r"^// @temper require (.*)$", source, re.M)
# the architecture the file's flags ask for (sm_90a for setmaxnreg, TMA), else sm_90
arch = (re.findall(r"^// @temper flags .*--gpu-architecture=(\w+)", source, re.M) or ["sm_90"])[0]
params = {m[0]: m[1].split() for m in re.findall(r"^// @temper param (\w+) (.*)$", source, re.M)}
# every knob at its first value (the default the tuner starts from), then each listed change
settings = [""] + [l.strip() for l in more.splitlines() if l.strip()]
failures = 0
for setting in settings:
    knobs = {k: int(v[0]) for k, v in params.items()}
    for kv in setting.split():
        k, v = kv.split("=")
        assert k in params, "no knob %s" % k
        knobs[k] = int(v)
    allowed = all(eval(r.replace("&&", " and ").replace("||", " or ").replace("/", "//"), {}, dict(knobs))
                  for r in requires)
    opts = ["-arch=" + arch, "-Xptxas", "-v"] + ["-D%s=%d" % kv for kv in knobs.items()]
    prog = ctypes.c_void_p()
    lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None)
    status = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts]))
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    log = log.value.decode(errors="replace")
    at = log.find("entry function '%s'" % kernel)  # the kernel's lines, not another kernel's
    main = log[at:] if at >= 0 else ""
    regs = re.search(r"Used (\d+) registers", main)
    spills = re.findall(r"(\d+) bytes spill (?:stores|loads)", main)
    threads = knobs["BM"] // knobs["TM"] * (knobs["BN"] // knobs["TN"])
    cap = min(255, 65536 // (threads * knobs["MINB"])) if "MINB" in knobs else 255
    what = " ".join("%s=%d" % kv for kv in knobs.items())
    if allowed and status == 0 and regs and int(regs.group(1)) <= cap and spills and not any(int(s) for s in spills):
        print("ok   %s %s: compiles for %s, %s registers (cap %d), no spills" % (name, what, arch, regs.group(1), cap))
    else:
        failures += 1
        print("FAIL %s %s: requires %s, NVRTC status %d, registers %s (cap %d), spills %s\n%s"
              % (name, what, "hold" if allowed else "refuse it", status, regs and regs.group(1), cap, spills,
                 log[-1500:]))
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
    [ $ran -eq 1 ] || { echo "SKIP: neither an OpenCL device nor NVRTC"; return 77; }
    [ $failures -eq 0 ] && echo "all passed" || echo "$failures failed"
    [ $failures -eq 0 ]
}
