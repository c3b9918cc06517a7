// Right (tasks/L3/moe_grouped_gemm's note: a two-accumulator kernel passes at 0.8 of the
// tolerance): even and odd terms summed separately in fp32 and added at the end, another order.
// The task's naive.cl, the changed lines marked CHANGED (the CUDA twin is tests/cases/cuda/correct_moe_grouped_gemm_two_accumulators.cu).
// @expect correct
// @temper task moe_grouped_gemm
// @temper launch moe_gemm grid(ceil_div(F, 16), ceil_div(T, 16)) block(16, 16) args(y, x, W, expert, T, Hd, F, E)

static float bf16_to_f32(ushort b)
{
    return as_float((uint)b << 16);
}

/* Round to nearest even; NaN stays a (quiet) NaN. */
static ushort f32_to_bf16(float f)
{
    uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (ushort)((u >> 16) | 0x40u);
    return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

__kernel void moe_gemm(__global ushort *y, __global const ushort *x, __global const ushort *W,
                       __global const int *expert, int T, int Hd, int F, int E)
{
    int f = get_global_id(0);
    int t = get_global_id(1);
    if (t >= T || f >= F)
        return;
    __global const ushort *xt = x + (size_t)t * Hd;
    __global const ushort *we = W + (size_t)expert[t] * Hd * F;
    float acc = 0.0f, acc1 = 0.0f; /* CHANGED: two accumulators */
    int k = 0;
    for (; k + 1 < Hd; k += 2) {
        acc += bf16_to_f32(xt[k]) * bf16_to_f32(we[(size_t)k * F + f]);
        acc1 += bf16_to_f32(xt[k + 1]) * bf16_to_f32(we[(size_t)(k + 1) * F + f]);
    }
    if (k < Hd)
        acc += bf16_to_f32(xt[k]) * bf16_to_f32(we[(size_t)k * F + f]);
    acc += acc1;
    y[(size_t)t * F + f] = f32_to_bf16(acc);
}
