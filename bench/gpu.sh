#!/usr/bin/env bash
# gpu.sh: everything temper measures on an NVIDIA GPU, in one call of the device machine.
#
#   bench/gpu.sh prepare   here (Debian 12): Release build, binaries copied into .gpu/
#   bench/gpu.sh run [STAGE...]   there: tests sandbox (temper devices and --selftest: the worker's
#                          confinement on the GPU machine) suite tune evals search throughput fidelity deep
#                          floor (bench/stream_floor.cu, built there with nvcc: how fast a plain
#                          read of 117.5 and 470 MB can go under the timing protocol) tfloor
#                          (bench/transpose_floor.cu, built there with nvcc: copies with a tiled
#                          transpose's DRAM address stream but no in-tile transpose, per tile shape
#                          and order, beside real transposes and a plain copy, at 16384 x 16384 fp32,
#                          every output checked) skips race compat serve peers (PyTorch
#                          eager, torch.compile and Triton's tutorial kernels timed beside temper's
#                          best and expert, the cuBLAS experts beside torch.matmul, every tunable
#                          candidate tuned, issue 14's goals judged: bench/peers.py) (default: tests
#                          suite throughput fidelity deep); logs and JSON under
#                          $OUT (or /tmp/temper-gpu) as logs.tar.gz, the summary table last
set -u
cd "$(dirname "$0")/.."
. bench/carry_libs.sh
export TEMPER_TASKS=${TEMPER_TASKS:-$PWD/tasks} # tasks of this checkout (docs/task.md)
case "${1:-}" in
prepare)
    set -e
    cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build build-gpu -j"$(nproc)" >/dev/null
    mkdir -p .gpu
    cp build-gpu/temper build-gpu/temper-worker build-gpu/tests/cases_test build-gpu/tests/baselines_test build-gpu/tests/cuda_smoke \
        build-gpu/tests/cublas_smoke .gpu/
    [ ! -f build-gpu/temper-worker ] || cp build-gpu/temper-worker .gpu/
    # the libraries temper loads that the GPU machine may lack (libmicrohttpd, hiredis and theirs)
    rm -rf .gpu/lib
    carry_libs_collect .gpu/lib .gpu/temper .gpu/temper-worker
    # redis-server for the gym's benchmark (bench/serve_workers.sh run with BENCH_SERVE_DIR=.gpu)
    if command -v redis-server >/dev/null; then
        cp "$(readlink -f "$(command -v redis-server)")" .gpu/redis-server
        carry_libs_collect .gpu/lib .gpu/redis-server
    fi
    # BASE_BUILD=DIR: the build of an earlier commit, timed against this one in the throughput
    # stage of the same call (its temper, and its temper-worker where it has one).
    # MID_BUILD=DIR: a second earlier build, timed as a third binary (the rounds new, base, mid,
    # mid, base, new), to tell two changes' costs apart in one call.
    rm -rf .gpu/base .gpu/mid
    for pair in "base:${BASE_BUILD:-}" "mid:${MID_BUILD:-}"; do
        dir=${pair#*:}
        [ -n "$dir" ] || continue
        mkdir -p ".gpu/${pair%%:*}"
        cp "$dir/temper" ".gpu/${pair%%:*}/"
        [ ! -f "$dir/temper-worker" ] || cp "$dir/temper-worker" ".gpu/${pair%%:*}/"
    done
    exclude=$(git rev-parse --git-path info/exclude) # .git is a file in a worktree
    mkdir -p "$(dirname "$exclude")"
    grep -qx '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >>"$exclude"
    ls -la .gpu
    exit 0
    ;;
run) ;;
*)
    echo "usage: bench/gpu.sh prepare|run" >&2
    exit 2
    ;;
esac

dest=${OUT:-/tmp/temper-gpu}
mkdir -p "$dest"
work=$(mktemp -d /tmp/temper-gpu-XXXXXX)
# Raw logs and JSON collect here; after every stage they are packed into $dest/logs.tar.gz, so a
# call cut short still brings back what finished (the device tool returns at most 8 files).
out=$work/raw
mkdir -p "$out"
pack() { tar -czf "$dest/logs.tar.gz" -C "$out" . 2>/dev/null; cp "$summary" "$dest/summary.txt" 2>/dev/null; }
export TEMPER_HOME=$work/home TEMPER_CACHE=$work/cache PATH=$PATH:/usr/local/cuda/bin
T=.gpu/temper
[ ! -d .gpu/lib ] || carry_libs_link .gpu/lib $T .gpu/temper-worker || exit 1
summary=$out/summary.txt
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }
stages=${*:2}
[ -n "$stages" ] || stages="tests suite throughput fidelity deep"
has() { case " $stages " in *" $1 "*) return 0 ;; esac; return 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee -a "$summary"
timeout 60 $T calibrate --json >"$out/calibrate.json" 2>"$out/calibrate.err"
python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); print("calibrate: copy %.0f GB/s, read %.0f GB/s, fp32 FMA %.1f TFLOP/s, bf16 GEMM %.0f TFLOP/s" % (c["copy_gbs"], c["read_gbs"], c["fma_gflops"]/1e3, c.get("tensor_bf16_gflops", 0)/1e3))' "$out/calibrate.json" | tee -a "$summary"

if has tests; then
    note "== smoke tests, verdict cases, baselines against references (CUDA)"
    timeout 60 .gpu/cuda_smoke >"$out/cuda_smoke.log" 2>&1; note "cuda_smoke exit $?"
    timeout 60 .gpu/cublas_smoke >"$out/cublas_smoke.log" 2>&1
    note "cublas_smoke exit $?: $(grep -iE 'tflop|GB/s' "$out/cublas_smoke.log" | sed 's/^ *//' | tr '\n' ';')"
    # CASES_DIR: a folder of CUDA verdict cases to run instead of all of tests/cases/cuda
    timeout 600 .gpu/cases_test cuda "${CASES_DIR:-tests/cases/cuda}" tasks >"$out/cases_cuda.log" 2>&1
    note "cases_cuda exit $?: $(tail -1 "$out/cases_cuda.log")"
    grep -E "^FAIL" "$out/cases_cuda.log" | cut -c1-300 | tee -a "$summary"
    if [ "${TESTS_BASELINES:-1}" = 1 ]; then # TESTS_BASELINES=0: the verdict cases alone
        timeout 300 .gpu/baselines_test cuda tasks >"$out/baselines_cuda.log" 2>&1
        note "baselines_cuda exit $?: $(tail -1 "$out/baselines_cuda.log")"
        grep -E "^FAIL" "$out/baselines_cuda.log" | cut -c1-300 | tee -a "$summary"
    fi
    pack
fi

if has sandbox; then
    note "== the worker's sandbox: which parts hold here, and the attacks tried from inside a worker"
    timeout 120 $T devices >"$out/devices.txt" 2>&1
    note "devices exit $?"
    sed -n '/[Ss]andbox/,$p' "$out/devices.txt" | head -20 | tee -a "$summary"
    timeout 300 $T devices --selftest >"$out/selftest.txt" 2>&1
    note "selftest exit $?: $(tail -1 "$out/selftest.txt")"
    grep ESCAPED "$out/selftest.txt" | tee -a "$summary"
    pack
fi

if has suite; then
    note "== every task's CUDA baseline (and expert) timed at its GPU bench shapes"
    timeout 150 $T eval tasks/L*/*/naive.cu --json --no-store --time-budget 0.5 >"$out/suite.jsonl" 2>"$out/suite.err"
    python3 bench/gpu_tables.py suite "$out/suite.jsonl" | tee -a "$summary"
    pack
fi

if has evals; then
    note "== evaluations listed in EVALS (one per line: FILE [temper eval options])"
    i=0
    while read -r line; do
        [ -n "$line" ] || continue
        i=$((i + 1))
        echo "$line" >"$out/eval_$i.jsonl.label"
        # shellcheck disable=SC2086
        timeout "${EVAL_TIMEOUT:-90}" $T eval $line --json --no-store >"$out/eval_$i.jsonl" 2>"$out/eval_$i.err"
        echo "$line: exit $?" >>"$out/evals.err"
        pack
    done <<<"${EVALS:-}"
    python3 bench/gpu_tables.py evals $(ls "$out"/eval_*.jsonl 2>/dev/null | sort -V) | tee -a "$summary"
    pack
fi

if has tune; then
    note "== tunes of the tunable candidates (default strategy, ${TUNE_BUDGET:-24} evaluations each)"
    for f in ${TUNE_FILES:-tasks/L1/*/fast.cu tasks/L1/gemv/sweep.cu tasks/L1/sgemm/tiled.cu tasks/L1/hgemm/wgmma.cu tasks/L1/hgemm/mma.cu}; do
        [ -f "$f" ] || continue
        start=$(date +%s)
        timeout "${TUNE_TIMEOUT:-75}" $T tune "$f" --budget "${TUNE_BUDGET:-24}" --screen-budget 0.15 --full-budget 0.5 --retime 2 \
            --json >"$out/tune_$(echo "$f" | tr '/' '_').json" 2>>"$out/tune.err"
        echo "$f exit $? in $(($(date +%s) - start)) s" | tee -a "$out/tune.err"
        pack
    done
    python3 bench/gpu_tables.py tune "$out"/tune_*.json | tee -a "$summary"
    pack
fi

if has search; then
    note "== exhaustive landscapes for the search-efficiency replay"
    # Spaces of 200 or more: knobs only, or FILE:cc for knobs and compiler controls together
    # (search_efficiency ... 0 FILES or ... 1 FILES).
    for entry in ${SEARCH_FILES:-tasks/L1/vector_add/fast.cu tasks/L1/gelu/fast.cu tasks/L1/cumsum/fast.cu tasks/L1/transpose/fast.cu:cc}; do
        f=${entry%:cc}
        knobs=--no-compiler-knobs
        [ "$f" = "$entry" ] || knobs=
        [ -f "$f" ] || continue
        start=$(date +%s)
        timeout "${SEARCH_TIMEOUT:-240}" $T tune "$f" --strategy exhaustive --budget 100000 $knobs --screen-budget 0.1 \
            --retime 1 --full-budget 0.5 \
            --json >"$out/exhaustive_$(echo "$f" | tr '/' '_').json" 2>>"$out/search.err"
        note "$entry: exhaustive tune exit $? in $(($(date +%s) - start)) s"
        pack
    done
    python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); open(sys.argv[2],"w").write("\n".join(c.iterdump()))' \
        "$TEMPER_HOME/temper.db" "$dest/store.sql" && gzip -f "$dest/store.sql"
    ls -la "$dest"/store.sql.gz | tee -a "$summary"
    pack
fi

if has throughput; then
    # Every binary (this build, and .gpu/base/temper when prepare was given BASE_BUILD) evaluates
    # the same 200 distinct candidates, in the order new, base, base, new, so that drift over the
    # call affects both alike; each round writes fresh sources, so no round hits the build cache.
    binaries=$T
    [ ! -x .gpu/base/temper ] || binaries="$T .gpu/base/temper .gpu/base/temper $T"
    [ ! -x .gpu/base/temper ] || [ ! -x .gpu/mid/temper ] ||
        binaries="$T .gpu/base/temper .gpu/mid/temper .gpu/mid/temper .gpu/base/temper $T"
    tn=${THROUGHPUT_N:-200} # THROUGHPUT_N: candidates per round (a short call's fewer)
    note "== throughput: $tn distinct candidates per round; rounds: $binaries"
    round=0
    for b in $binaries; do
        round=$((round + 1))
        rm -rf "$work/cands" && mkdir -p "$work/cands"
        for i in $(seq 1 "$tn"); do
            { echo "// round $round, variant $i: the same kernel, a different source, so no build cache hit"
                cat tasks/L1/softmax/block.cu; } >"$work/cands/softmax_$i.cu"
        done
        # Each binary its own store: one of another schema version refuses the other's, even with
        # --no-store (the ceilings live there).
        home=$work/home-$(echo "$b" | tr -c 'a-z0-9\n' '_')
        mkdir -p "$home"
        # calibrated before its first round, outside the timed rounds
        [ -f "$home/calibrated" ] || { TEMPER_HOME=$home timeout 60 "$b" calibrate >/dev/null 2>&1; touch "$home/calibrated"; }
        start=$(date +%s.%N)
        # THROUGHPUT_BUDGET: the timing budget per bench shape (session 6 measured with 0.5 s; eval's
        # default is 2 s, whose longer warm-up adds 45 ms per softmax candidate: 356 against 446 / min)
        TEMPER_HOME=$home timeout 200 "$b" eval "$work"/cands/*.cu --json --no-store --time-budget "${THROUGHPUT_BUDGET:-2}" \
            >"$out/full_$round.jsonl" 2>"$out/full_$round.err"
        full_s=$(python3 -c "import time; print(time.time() - $start)")
        start=$(date +%s.%N)
        TEMPER_HOME=$home timeout 100 "$b" eval "$work"/cands/*.cu --json --no-store --no-timing \
            >"$out/check_$round.jsonl" \
            2>"$out/check_$round.err"
        check_s=$(python3 -c "import time; print(time.time() - $start)")
        note "-- round $round: $b"
        python3 bench/gpu_tables.py throughput "$out/full_$round.jsonl" "$full_s" "$out/check_$round.jsonl" \
            "$check_s" | tee -a "$summary"
        pack
    done
fi

if has skips; then
    # A kernel that skips its work on one launch in ten at the bench shape (SKIP_CASE) evaluated
    # ten times by each binary: every timed launch's output is verified, so it must be incorrect
    # every time; the base binary verified only the last timed launch.
    case_file=${SKIP_CASE:-tests/cases/cuda/skip_every_tenth_launch.cu}
    for b in $T .gpu/base/temper; do
        [ -x "$b" ] || continue
        tally=""
        for i in $(seq 1 10); do
            v=$(timeout 90 "$b" eval "$case_file" --json --no-store --time-budget 0.5 2>>"$out/skips.err" |
                python3 -c 'import json,sys; print(json.load(sys.stdin)["verdict"])' 2>/dev/null)
            tally="$tally ${v:-error}"
        done
        note "skips: $b on $case_file:$(echo "$tally" | tr ' ' '\n' | sort | uniq -c | tr '\n' ' ')"
        pack
    done
fi

if has fidelity; then
    note "== timing fidelity: one kernel timed in two runs, and against Nsight Compute"
    timeout 60 $T eval tasks/L1/softmax/block.cu --json --no-store >"$out/fid1.json" 2>/dev/null
    timeout 90 $T eval tasks/L1/softmax/block.cu --json --no-store --profile >"$out/fid2.json" 2>"$out/fid2.err"
    timeout 90 $T eval tasks/L1/vector_add/naive.cu --json --no-store --profile >"$out/fid3.json" 2>"$out/fid3.err"
    python3 bench/gpu_tables.py fidelity "$out/fid1.json" "$out/fid2.json" "$out/fid3.json" | tee -a "$summary"
    pack
fi

if has floor; then
    note "== stream floor: plain reads and copies under the timing protocol (bench/stream_floor.cu)"
    if nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o "$work/stream_floor" bench/stream_floor.cu \
        >"$out/floor_build.log" 2>&1; then
        timeout 120 "$work/stream_floor" ${FLOOR_MB:-117.5 470} >"$out/floor.txt" 2>&1
        note "stream_floor exit $?"
        cat "$out/floor.txt" >>"$summary"
    else
        note "stream_floor did not build: $(tail -3 "$out/floor_build.log")"
    fi
    pack
fi

if has tfloor; then
    note "== transpose floor: a tiled transpose's address stream without the transpose (bench/transpose_floor.cu)"
    if nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o "$work/transpose_floor" bench/transpose_floor.cu \
        >"$out/tfloor_build.log" 2>&1; then
        timeout 180 "$work/transpose_floor" "${TFLOOR_N:-16384}" >"$out/tfloor.txt" 2>&1
        note "transpose_floor exit $? (1: some variant's output was wrong)"
        cat "$out/tfloor.txt" >>"$summary"
    else
        note "transpose_floor did not build: $(tail -3 "$out/tfloor_build.log")"
    fi
    pack
fi

if has deep; then
    note "== deep checks"
    timeout 120 $T eval tests/cases/cuda/correct_softmax_warp_shuffle.cu --json --no-store --no-timing --sanitize >"$out/san_ok.json" 2>"$out/san_ok.err"
    python3 bench/gpu_tables.py sanitize "$out/san_ok.json" | tee -a "$summary"
    pack
fi

if has race; then
    # racecheck on a kernel with a read-after-write race whose value never reaches the output:
    # the verdict, and the hazards reported against the summary's count (issue 15)
    note "== the sanitizer on a racy kernel"
    timeout 200 $T eval tests/cases/cuda/correct_output_shared_race.cu --json --no-store --no-timing --sanitize \
        >"$out/san_race.json" 2>"$out/san_race.err"
    note "correct_output_shared_race --sanitize exit $?: $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["verdict"], "|", r["message"][:200], "|", json.dumps(r.get("sanitize", {}).get("racecheck", {}).get("hazards")))' "$out/san_race.json" 2>&1)"
    pack
fi

if has compat; then
    # Kernels as people write them (issue 15): the real-kernel set's verdicts against their
    # expectations, timed; the sanitizer's report on a racy kernel (report mode, then strict); the
    # device attributes a candidate's expressions see.
    note "== kernels as people write them"
    TIMING=1 timeout 240 tests/real_kernels_test.sh $T "$PWD" cuda >"$out/real_cuda.log" 2>&1
    note "real_kernels cuda exit $?: $(tail -1 "$out/real_cuda.log")"
    grep -E "^(FAIL|MISMATCH)|expected" "$out/real_cuda.log" | cut -c1-250 | head -12 | tee -a "$summary"
    for mode in "" "=strict"; do
        timeout 200 $T eval tests/cases/cuda/correct_output_shared_race.cu --json --no-store --no-timing --sanitize$mode \
            >"$out/san_race$mode.json" 2>"$out/san_race$mode.err"
        note "correct_output_shared_race --sanitize$mode exit $?: $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["verdict"], "|", r["message"][:160], "|", json.dumps(r.get("sanitize"))[:400])' "$out/san_race$mode.json" 2>&1)"
        python3 bench/gpu_tables.py sanitize "$out/san_race$mode.json" 2>&1 | tail -8 | tee -a "$summary"
    done
    timeout 60 $T eval tests/cases/cuda/correct_softmax_warp_shuffle.cu --json --no-store --no-timing \
        >"$out/attrs.json" 2>"$out/attrs.err"
    note "device attributes: $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["verdict"], json.dumps(r["device_info"].get("attrs")))' "$out/attrs.json" 2>&1)"
    pack
fi

if has serve; then
    # The gym (issue 10): distinct softmax candidates per minute through temper serve --redis with
    # one temper worker per GPU (one, then two where there are two) against temper eval directly.
    note "== the gym on Redis: candidates per minute"
    CANDIDATES=${SERVE_CANDIDATES:-48} BENCH_SERVE_DIR=.gpu OUT=$out/serve timeout 420 bench/serve_workers.sh run \
        >"$out/serve_workers.log" 2>&1
    note "serve_workers exit $?"
    tail -12 "$out/serve_workers.log" | tee -a "$summary"
    pack
fi

if has peers; then
    # What a user would pick instead (issue 14), within PEERS_BUDGET_S (default 420 s, counted from
    # the stage's start), in this order so that a call cut short still has the most. Times are
    # session 10's on the H200 (logs of that call):
    #  1. the experts' correctness (cublas_smoke, 3 s); the peers' semantics against the tasks' C
    #     references on the CPU (tests/peers_test.py, 8 s);
    #  2. the experts beside torch.matmul, round 1: the GEMMs evaluated with TEMPER_EXPERT_PICK=
    #     cublas, first and fastest (src/device/cuda_blas.h), on PyTorch's own cuBLAS, so the library
    #     is not a difference (about 6 s each);
    #  3. the suite: every baseline but the GEMMs' and every tunable candidate at its default knobs,
    #     each timed with its task's expert and stored, so that `temper best` has a kernel for every
    #     task whichever tunes fit (60 s);
    #  4. PyTorch eager, torch.compile, the Triton tutorial kernels, and torch.matmul through
    #     cuBLASLt and after an idle GPU, at every bench shape (bench/peers.py --measure, at most
    #     PEERS_TIMEOUT = 150 s; 70 s with Triton's sgemm, whose 25 s autotune is gone now);
    #  5. the experts, round 2, picks in the reverse order (interleaved with round 1 around 4.);
    #  6. every tunable candidate (any .cu of an L1/L2 task with knobs but naive.cu and
    #     PEERS_TUNE_SKIP) tuned by `temper tune` at its default budget (PEERS_TUNE_BUDGET, 40), in
    #     `peers.py --tune-order`'s order: the tasks whose goals were open first (sgemm, rmsnorm_rope,
    #     attention_decode, transpose, layernorm, softmax, ...), each task's fastest kernel at
    #     default knobs before its others; each at most PEERS_TUNE_TIMEOUT (90 s) and what is left
    #     of the budget less 10 s for the table; one not started or cut short says so, and what it
    #     finished is stored. Session 10: 6-10 s each, hgemm 23 s, sgemm 26 evaluations in 41 s (so
    #     about 65 s for 40); each tune's time goes to peers_tune_times.txt for the next session;
    #  7. each GEMM task's best against torch.matmul's cuBLAS call, interleaved, PEERS_IL_ROUNDS (3)
    #     rounds (about 25 s a task, kept back from the tunes' budget);
    #  8. the tables (peers.py --report: the goals judged with this call's calibrate.json; 2 s).
    # The whole stage: about 6-7 minutes. PEERS_TASKS=a,b limits the peers; PEERS_TUNE_FILES
    # replaces the tune list.
    note "== peers: temper's tuned best and expert beside PyTorch eager, torch.compile and Triton"
    peers_start=$(date +%s)
    peers_left() { echo $((${PEERS_BUDGET_S:-420} - ($(date +%s) - peers_start))); }
    timeout 60 .gpu/cublas_smoke >"$out/peers_cublas_smoke.log" 2>&1
    note "cublas_smoke exit $?: $(grep -iE 'tflop|GB/s' "$out/peers_cublas_smoke.log" | sed 's/^ *//' | tr '\n' ';')"
    timeout 120 python3 tests/peers_test.py "$PWD" >"$out/peers_test.log" 2>&1
    note "peers_test exit $?: $(tail -1 "$out/peers_test.log"); $(grep -E '^(FAIL|ERROR)|AssertionError' "$out/peers_test.log" | cut -c1-200 | tr '\n' ';')"
    tunables=${PEERS_TUNE_FILES:-$(for f in tasks/L1/*/*.cu tasks/L2/*/*.cu; do
        case " ${PEERS_TUNE_SKIP-tasks/L1/gemv/fast.cu} " in *" $f "*) continue ;; esac # gemv: sweep.cu supersedes it
        case $f in */naive.cu) continue ;; esac
        if grep -q '@temper param' "$f"; then echo "$f"; fi
    done)}
    # The experts beside torch.matmul: a kernel of each GEMM task carries its expert (timed beside
    # it in the worker, interleaved; PEERS_GEMM_FILES, session 10's); every pick on PyTorch's cuBLAS
    # where torch is.
    gemm_files=$(for f in ${PEERS_GEMM_FILES:-tasks/L1/hgemm/wgmma.cu tasks/L1/sgemm/tiled.cu}; do
        if [ -f "$f" ]; then echo "$f"; fi
    done)
    torch_blas=$(python3 -c 'import torch; a = torch.ones(64, 64, device="cuda", dtype=torch.bfloat16); (a @ a).sum().item(); print(next(l.split()[-1].rsplit("/", 1)[0] for l in open("/proc/self/maps") if "libcublasLt" in l))' 2>/dev/null)
    expert_runs=()
    expert_round() { # ROUND PICK...
        local round=$1 pick
        shift
        for pick in "$@"; do
            # shellcheck disable=SC2086
            LD_LIBRARY_PATH=${torch_blas:+$torch_blas${LD_LIBRARY_PATH:+:}}${LD_LIBRARY_PATH:-} TEMPER_EXPERT_PICK=$pick \
                TEMPER_EXPERT_TRACE=1 TEMPER_WORKER_STDERR=1 timeout 60 $T eval $gemm_files --json --no-store \
                --time-budget 0.5 >"$out/peers_expert_${round}_$pick.jsonl" 2>"$out/peers_expert_${round}_$pick.err"
            note "experts, round $round, TEMPER_EXPERT_PICK=$pick: exit $?: $(grep -h '^temper expert' "$out/peers_expert_${round}_$pick.err" | cut -c1-300 | tr '\n' ';')"
            expert_runs+=(--expert-run "$pick=$out/peers_expert_${round}_$pick.jsonl")
        done
    }
    note "experts on ${torch_blas:-the system cuBLAS (torch loaded none)}"
    [ -z "$gemm_files" ] || expert_round 1 cublas first fastest
    pack
    suite_files=$(for f in tasks/L1/*/naive.cu tasks/L2/*/naive.cu; do
        case $f in tasks/L1/hgemm/* | tasks/L1/sgemm/*) ;; *) echo "$f" ;; esac # 240 ms a run; the kernels are checked against them anyway
    done)
    # shellcheck disable=SC2086
    TEMPER_EXPERT_TRACE=1 TEMPER_WORKER_STDERR=1 timeout 240 $T eval $suite_files $tunables --json --time-budget 0.5 \
        >"$out/peers_suite.jsonl" 2>"$out/peers_suite.err"
    note "suite exit $? after $(($(date +%s) - peers_start)) s; expert choices: $(grep -h '^temper expert' "$out/peers_suite.err" | cut -c1-300 | tr '\n' ';')"
    pack
    PYTHONUNBUFFERED=1 timeout -k 20 "${PEERS_TIMEOUT:-150}" python3 bench/peers.py --measure --json "$out/peers.json" \
        ${PEERS_TASKS:+--only "$PEERS_TASKS"} >"$out/peers.log" 2>"$out/peers.err"
    note "peers.py --measure exit $? after $(($(date +%s) - peers_start)) s"
    head -1 "$out/peers.log" | cut -c1-300 | tee -a "$summary"
    pack
    [ -z "$gemm_files" ] || expert_round 2 fastest first cublas
    pack
    # shellcheck disable=SC2086
    order=$(python3 bench/peers.py --tune-order $tunables --suite "$out/peers_suite.jsonl" 2>>"$out/peers.err") ||
        order=$tunables
    il_reserve=$((${PEERS_IL_ROUNDS:-3} * 25)) # step 7's rounds: an hgemm eval takes about 8 s, an sgemm one 12
    for f in $order; do
        left=$(($(peers_left) - 10 - il_reserve))
        if [ "$left" -lt 20 ]; then
            note "tune $f not started: ${left} s of the stage's budget left (PEERS_BUDGET_S=${PEERS_BUDGET_S:-420}); its default knobs stand"
            echo "$f skipped" >>"$out/peers_tune_times.txt"
            continue
        fi
        limit=$((left < ${PEERS_TUNE_TIMEOUT:-90} ? left : ${PEERS_TUNE_TIMEOUT:-90}))
        json=$out/peers_tune_$(echo "$f" | tr '/' '_').json
        start=$(date +%s)
        # --time stops the tune itself in time to re-time its best; a SIGINT at the limit still
        # leaves its summary (a SIGTERM left none: session 10's sgemm row)
        timeout -s INT -k 20 "$limit" $T tune "$f" --budget "${PEERS_TUNE_BUDGET:-40}" --screen-budget 0.15 \
            --full-budget 0.5 --retime 2 --time $((limit > 30 ? limit - 12 : 18)) --json >"$json" 2>"$json.err"
        rc=$?
        cat "$json.err" >>"$out/peers_tune.err"
        echo "$f $(($(date +%s) - start)) s exit $rc" >>"$out/peers_tune_times.txt"
        if [ "$rc" = 137 ] || ! [ -s "$json" ]; then
            mv "$json" "$json.cut" # no summary JSON: gpu_tables.py would fail on it
            note "tune $f cut short at its limit of $limit s, $(grep -c '^tune ' "$json.err") evaluations in: those finished are stored and count in temper best; no summary"
        else
            note "tune $f exit $rc in $(($(date +%s) - start)) s"
        fi
        pack
    done
    ls "$out"/peers_tune_*.json >/dev/null 2>&1 && python3 bench/gpu_tables.py tune "$out"/peers_tune_*.json >>"$out/peers_tunes.txt" 2>&1
    # 7. each GEMM task's best (`temper best --out`: its source with the knobs fixed) timed against
    #    the cuBLAS call torch.matmul makes (TEMPER_EXPERT_PICK=cublas, on PyTorch's cuBLAS),
    #    launch by launch in one worker, PEERS_IL_ROUNDS rounds: the GEMM goals are judged on these
    #    (a compute-bound kernel's times taken apart differ by the GPU's power state: peers.py).
    il_files=()
    for task in ${PEERS_IL_TASKS-hgemm sgemm}; do
        f=$out/peers_best_$task.cu
        if ! $T best "$task" --out "$f" >"$f.txt" 2>&1; then
            note "interleaved $task: no best ($(tail -1 "$f.txt" | cut -c1-200))"
            continue
        fi
        for round in $(seq "${PEERS_IL_ROUNDS:-3}"); do
            LD_LIBRARY_PATH=${torch_blas:+$torch_blas${LD_LIBRARY_PATH:+:}}${LD_LIBRARY_PATH:-} TEMPER_EXPERT_PICK=cublas \
                timeout 60 $T eval "$f" --json --no-store --time-budget 1 >>"$out/peers_il_$task.jsonl" 2>>"$out/peers_il.err"
            rc=$?
            note "interleaved $task, round $round: exit $rc: $(python3 -c 'import sys; sys.path.insert(0, "bench"); import peers
r = (peers.jsonl(sys.argv[1]) or [{}])[-1]; t = (r.get("timings") or [{}])[0]
print("%s, %s ms, expert %s ms" % (r.get("verdict"), t.get("median_ms"), t.get("expert_median_ms")))' "$out/peers_il_$task.jsonl" 2>&1 | tail -1)"
        done
        il_files+=(--interleaved "$out/peers_il_$task.jsonl")
        pack
    done
    python3 bench/peers.py --report --temper "$T" --suite "$out/peers_suite.jsonl" --json "$out/peers.json" \
        --calibrate "$out/calibrate.json" "${expert_runs[@]}" "${il_files[@]}" ${PEERS_TASKS:+--only "$PEERS_TASKS"} \
        >"$out/peers_table.txt" 2>>"$out/peers.err"
    note "peers.py --report exit $? after $(($(date +%s) - peers_start)) s"
    sed -n '/^| task/,$p' "$out/peers_table.txt" | tee -a "$summary"
    tail -3 "$out/peers.err" | cut -c1-300 | tee -a "$summary"
    pack
fi
pack
cat "$summary"
rm -rf "$work"
