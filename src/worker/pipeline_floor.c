/* pipeline_floor.c: a bench shape's timing on the device's roofline, and the test for times that
 * no honest kernel can reach. The roofline floor (roofline_floor_ms, what roofline_share is
 * measured against) is the task's bytes at the measured copy bandwidth or its flops at the
 * measured compute ceiling, whichever takes longer. A launch faster than the device's peak is
 * impossible: its work cannot all have been done (a result kept from an earlier launch, work
 * skipped on inputs it recognised), and the verdict is `incorrect`. The peak is the measured
 * ceilings raised by a margin per bound, as far as measurement shows an honest kernel can beat
 * them (below), not by the factor of two this test once allowed, which let a kernel pass at up to
 * twice the device's peak (impossible_floor_ms in the timing). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pipeline_impl.h"

/* How far an honest kernel can beat the measured ceilings, by bound (the floor at the peak is the
 * roofline floor at the ceilings divided by these). The numbers are from bench/RESULTS.md.
 *
 * GPU, memory: the ceiling is the faster of the copy and the read-only bandwidth (calibrate.c,
 * best of 20 runs each). The fastest honest kernels measured on the H200 move their bytes at
 * 102-104 % of copy (vector_add, swiglu) and 105-108 % (cross_entropy, which mostly reads: 4496
 * GB/s against copy 4236-4298 and read 4190-4253 in other sessions); calibrations of separate
 * sessions differ by 1.5 %, and the vendor's HBM3e peak, 4.8 TB/s, is 112-113 % of the measured
 * copy, which no kernel can pass: 1.25 leaves a tenth over that.
 * GPU, compute: the FMA ceiling is the best of 10 runs of a kernel of nothing but FMAs (62.9
 * TFLOP/s on the H200, 94 % of the vendor's 66.9), the tensor ceiling the best of 10 cuBLAS bf16
 * GEMMs of 8192^3 (872-886 TFLOP/s, 88-90 % of the vendor's 989 dense). The best honest kernels
 * reach 73-82 % of the FMA ceiling (tiled SGEMM, cuBLAS SGEMM) and 89-91 % of the tensor ceiling
 * (the wgmma hgemm at 790 TFLOP/s); the vendor's peaks are 106 % and 112-113 % of the ceilings, so
 * 1.25 again. (An algorithm that does fewer operations than a task's `flops` counts, such as a
 * Winograd convolution, could pass it honestly; none of the suite's kernels does.)
 * CPU (PoCL): the same margins over ceilings that calibration corrects for the load it ran under
 * (CPU_SHARE_MAX). On the 2-core development machine (2026-12-07 in RESULTS.md), calibrations
 * beside other engineers' builds and tests (other_cpu_share 0.66-0.83) measured copy 9-29 GB/s
 * where a quiet one measured 70, and the read bandwidth about as much as copy (calibrate.c reads a
 * run per work-item there); honest vector_add medians evaluated right after ran at 0.35-1.6x those
 * loaded ceilings (single launches up to 3.3x), which the margin alone would call impossible, and
 * at 0.09-0.22x the ceilings divided by 1 - share. */
#define GPU_MEMORY_MARGIN 1.25
#define GPU_COMPUTE_MARGIN 1.25
#define CPU_MEMORY_MARGIN 1.25
#define CPU_COMPUTE_MARGIN 1.25
/* A CPU's ceilings are measured under whatever load the machine has then, and its kernels meet
 * other loads later: the share of the machine other processes took during calibration
 * (other_cpu_share, counted up to this much) raises the peak in proportion, 1 / (1 - share), since
 * the calibration kernels had only the rest of it. Past this share the ceilings say little; the
 * cap keeps a floor (ten times the ceilings' rates) all the same. */
#define CPU_SHARE_MAX 0.9

/* The arithmetic ceiling of a task on this device: FP32 FMA throughput, or the tensor cores'
 * bf16 rate for tasks that may use them (int8 at twice that: Hopper's int8 rate, not measured).
 * Where the device has no tensor-core measurement (OpenCL), the FMA rate bounds the work. */
static double compute_ceiling(const struct temper_task *t, json_t *calib)
{
    double fma = json_number_value(json_object_get(calib, "fma_gflops"));
    double bf16 = json_number_value(json_object_get(calib, "tensor_bf16_gflops"));
    if (bf16 <= 0 || !strcmp(t->compute_ceiling, "fma_gflops"))
        return fma;
    return !strcmp(t->compute_ceiling, "tensor_int8") ? 2 * bf16 : bf16;
}

int floor_judge(const struct worker_state *ws, const struct temper_task *t, json_t *calib, int64_t flops,
                int64_t bytes, const double *samples, int n, double med, double bmed, const char *where,
                struct temper_result_timing *tm,
                struct failure *f)
{
    double copy_gbs = json_number_value(json_object_get(calib, "copy_gbs"));
    double ceiling = compute_ceiling(t, calib);
    if (copy_gbs <= 0 || ceiling <= 0)
        return 0;
    double mem_ms = (double)bytes / (copy_gbs * 1e9) * 1e3, math_ms = (double)flops / (ceiling * 1e9) * 1e3;
    double floor_ms = fmax(mem_ms, math_ms);
    tm->roofline_floor_ms = opt_real(floor_ms);
    tm->roofline_share = opt_real(floor_ms / med);
    tm->baseline_roofline_share = opt_real(floor_ms / bmed);
    tm->bound = strdup(mem_ms >= math_ms ? "memory" : "compute");
    tm->compute_ceiling = strdup(t->compute_ceiling);

    /* The floor at the peak: bytes at the faster of copy and read-only bandwidth, flops at the
     * compute ceiling, each raised by its margin. On a GPU every sample is held against it, not
     * only the median: a launch that skipped its work does not hide behind the others. A CPU
     * device shares its cores and memory with every other process, so one launch that ran alone
     * can beat ceilings measured under load honestly (seen on the 2-core test machine: a plain
     * vector_add at 0.45 of a floor calibrated under load); there the median, which the same load
     * slows, is held against it. */
    int gpu = ws->dev.info.is_gpu;
    double share = gpu ? 0 : fmin(fmax(json_number_value(json_object_get(calib, "other_cpu_share")), 0), CPU_SHARE_MAX);
    double mem_margin = (gpu ? GPU_MEMORY_MARGIN : CPU_MEMORY_MARGIN) / (1 - share);
    double math_margin = (gpu ? GPU_COMPUTE_MARGIN : CPU_COMPUTE_MARGIN) / (1 - share);
    double bw_gbs = fmax(copy_gbs, json_number_value(json_object_get(calib, "read_gbs")));
    double mem_peak_ms = (double)bytes / (bw_gbs * mem_margin * 1e9) * 1e3;
    double math_peak_ms = (double)flops / (ceiling * math_margin * 1e9) * 1e3;
    double peak_ms = fmax(mem_peak_ms, math_peak_ms);
    int under = 0;
    while (under < n && samples[under] < peak_ms)
        under++;
    if (!gpu && med >= peak_ms)
        under = 0;
    tm->impossible = opt_bool(under > 0);
    tm->impossible_floor_ms = opt_real(peak_ms);
    tm->samples_under_floor = opt_int(under);
    tm->ceilings = json_incref(calib);
    if (!under)
        return 0;
    char peak[256];
    if (mem_peak_ms >= math_peak_ms)
        snprintf(peak, sizeof(peak), "its %lld bytes at %.4g GB/s, %.3gx the measured %.4g GB/s", (long long)bytes,
                 bw_gbs * mem_margin, mem_margin, bw_gbs);
    else
        snprintf(peak, sizeof(peak), "its %lld flops at %.4g GFLOP/s, %.3gx the measured %s %.4g", (long long)flops,
                 ceiling * math_margin, math_margin, t->compute_ceiling, ceiling);
    if (gpu)
        return fail_with(f, TEMPER_VERDICT_INCORRECT,
                         "%d of %d timed launches at %s ran under %.4g ms, faster than this device's measured peak "
                         "allows (%s; the roofline floor is %.4g ms; fastest %.4g ms, median %.4g ms): impossible, "
                         "so the work cannot all have been done",
                         under, n, where, peak_ms, peak, floor_ms, samples[0], med);
    return fail_with(f, TEMPER_VERDICT_INCORRECT,
                     "the median %.4g ms of %d timed launches at %s is under %.4g ms, faster than this device's "
                     "measured peak allows (%s; the roofline floor is %.4g ms; fastest %.4g ms): impossible, so the "
                     "work cannot all have been done",
                     med, n, where, peak_ms, peak, floor_ms, samples[0]);
}
