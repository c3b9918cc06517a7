// A tunable fused residual add + LayerNorm for bandwidth (fp32), the OpenCL twin of fast.cu (same
// knobs and index math; sums over a row go through local memory in two levels instead of warp shuffles):
// h = x + r is written once and y from registers when the row fits (C <= TPR*VEC*REG), so x and
// r are read once; other rows (all rows when REG = 0) read back the h each work-item wrote for
// the variance and for y. TPR work-items per row (a power of two), RPB rows per work-group, VEC
// floats per access (4 or 2) when C % VEC == 0 and every pointer is 4*VEC-byte aligned, else one
// float at a time. Two-pass variance, eps 1e-5, as the reference.
// @temper task add_layernorm
// @temper param TPR 256 128 512 1024 64 32
// @temper param RPB 1 2 4
// @temper param VEC 4 2
// @temper param REG 4 0 1 2 8 16
// @temper require TPR * RPB <= 1024
// @temper require REG == 0 || (TPR * VEC * REG >= 4096 && TPR * VEC * REG <= 8192)
// @temper require 1024 % TPR == 0 && TPR % 32 == 0
// @temper launch add_layernorm_fast grid(ceil_div(R, RPB)) block(TPR * RPB) args(y, h, x, r, gamma, beta, R, C)

#if VEC == 4
typedef float4 vt;
#define VLOAD vload4
#define VSTORE vstore4
#else
typedef float2 vt;
#define VLOAD vload2
#define VSTORE vstore2
#endif
#define NREG (REG > 0 ? REG : 1)

/* The sum of v over one row's TPR work-items (slot: the row's place in the group), returned to
 * all of them; every work-item of the group calls it the same number of times, with parity
 * flipped between calls. Two levels and two barriers (a tree takes log2(TPR), and each barrier
 * costs a CPU runtime such as PoCL a pass over the work-group): 16 work-items add TPR/16 values
 * each, then every work-item adds those 16. Consecutive calls use different halves of red, so a
 * call's writes cannot meet the previous call's reads (the barriers between keep two calls back
 * apart). */
inline float row_sum(__local float *red, float v, int tid, int slot, int *parity)
{
    __local float *b = red + (*parity * RPB + slot) * (TPR + 16), *part = b + TPR;
    *parity ^= 1;
    b[tid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (tid < 16) {
        float t = 0.0f;
        for (int i = tid; i < TPR; i += 16)
            t += b[i];
        part[tid] = t;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float total = 0.0f;
    for (int i = 0; i < 16; i++)
        total += part[i];
    return total;
}

inline float vsum(vt v)
{
#if VEC == 4
    return (v.x + v.y) + (v.z + v.w);
#else
    return v.x + v.y;
#endif
}

/* One row of n elements (n = 0 for a group's rows past R) in VEC-wide accesses (n % VEC == 0). */
inline void row_vec(__local float *red, __global float *yr, __global float *hr, __global const float *xr,
                    __global const float *rr, __global const float *gamma, __global const float *beta, int n, int C,
                    int tid, int slot, int *parity)
{
    const int nv = n / VEC;
    if (REG > 0 && C / VEC <= NREG * TPR) {
        vt hv[NREG];
        float s = 0.0f;
        for (int k = 0; k < NREG; k++) {
            const int j = tid + k * TPR;
            if (j < nv) {
                hv[k] = VLOAD(j, xr) + VLOAD(j, rr);
                VSTORE(hv[k], j, hr);
                s += vsum(hv[k]);
            }
        }
        const float mean = row_sum(red, s, tid, slot, parity) / (float)C;
        float q = 0.0f;
        for (int k = 0; k < NREG; k++)
            if (tid + k * TPR < nv) {
                const vt d = hv[k] - mean;
                q += vsum(d * d);
            }
        const float rstd = rsqrt(row_sum(red, q, tid, slot, parity) / (float)C + 1e-5f);
        for (int k = 0; k < NREG; k++) {
            const int j = tid + k * TPR;
            if (j < nv)
                VSTORE((hv[k] - mean) * rstd * VLOAD(j, gamma) + VLOAD(j, beta), j, yr);
        }
        return;
    }
    /* k-indexed loops with a bounds test inside, as above: PoCL miscompiled this path written as
     * for (j = tid; j < nv; j += TPR) (stores past the row's end at R=16 C=256, TPR=256 VEC=2) */
    const int nk = (nv + TPR - 1) / TPR;
    float s = 0.0f;
    for (int k = 0; k < nk; k++) {
        const int j = tid + k * TPR;
        if (j < nv) {
            const vt hv = VLOAD(j, xr) + VLOAD(j, rr);
            VSTORE(hv, j, hr);
            s += vsum(hv);
        }
    }
    const float mean = row_sum(red, s, tid, slot, parity) / (float)C;
    float q = 0.0f;
    for (int k = 0; k < nk; k++) { /* the h this work-item wrote */
        const int j = tid + k * TPR;
        if (j < nv) {
            const vt d = VLOAD(j, hr) - mean;
            q += vsum(d * d);
        }
    }
    const float rstd = rsqrt(row_sum(red, q, tid, slot, parity) / (float)C + 1e-5f);
    for (int k = 0; k < nk; k++) {
        const int j = tid + k * TPR;
        if (j < nv)
            VSTORE((VLOAD(j, hr) - mean) * rstd * VLOAD(j, gamma) + VLOAD(j, beta), j, yr);
    }
}

/* The same, one float at a time (C % VEC != 0 or a pointer not aligned). */
inline void row_scalar(__local float *red, __global float *yr, __global float *hr, __global const float *xr,
                       __global const float *rr, __global const float *gamma, __global const float *beta, int n,
                       int C, int tid, int slot, int *parity)
{
    float s = 0.0f;
    for (int j = tid; j < n; j += TPR) {
        const float v = xr[j] + rr[j];
        hr[j] = v;
        s += v;
    }
    const float mean = row_sum(red, s, tid, slot, parity) / (float)C;
    float q = 0.0f;
    for (int j = tid; j < n; j += TPR) {
        const float d = hr[j] - mean;
        q += d * d;
    }
    const float rstd = rsqrt(row_sum(red, q, tid, slot, parity) / (float)C + 1e-5f);
    for (int j = tid; j < n; j += TPR)
        yr[j] = (hr[j] - mean) * rstd * gamma[j] + beta[j];
}

__kernel void __attribute__((reqd_work_group_size(TPR * RPB, 1, 1)))
add_layernorm_fast(__global float *y, __global float *h, __global const float *x, __global const float *r,
                   __global const float *gamma, __global const float *beta, int R, int C)
{
    __local float red[2 * RPB * (TPR + 16)];
    const int tid = get_local_id(0) % TPR, slot = get_local_id(0) / TPR;
    const int vec = C % VEC == 0 &&
                    ((((size_t)y) | ((size_t)h) | ((size_t)x) | ((size_t)r) | ((size_t)gamma) | ((size_t)beta)) &
                     (4 * VEC - 1)) == 0;
    const int groups = (R + RPB - 1) / RPB;
    int parity = 0;
    for (int g = get_group_id(0); g < groups; g += get_num_groups(0)) {
        const int rw = g * RPB + slot;
        const int live = rw < R;
        const size_t off = (size_t)(live ? rw : 0) * C;
        const int n = live ? C : 0;
        if (vec)
            row_vec(red, y + off, h + off, x + off, r + off, gamma, beta, n, C, tid, slot, &parity);
        else
            row_scalar(red, y + off, h + off, x + off, r + off, gamma, beta, n, C, tid, slot, &parity);
    }
}
