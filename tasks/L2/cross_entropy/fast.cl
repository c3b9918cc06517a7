// A tunable fused softmax cross-entropy for bandwidth, the OpenCL twin of fast.cu (same knobs and
// index math; the (max, sum) pairs merge through a local-memory tree instead of warp shuffles):
// each row is read once with an online log-sum-exp, one work-group of BLOCK work-items per row,
// VEC floats per access (when V % VEC == 0 and logits is 4*VEC-byte aligned, else one at a time),
// UNROLL accesses before their first use, one rescale per UNROLL*VEC values. Work-item 0 writes
// (m - x[label]) + log(s). FAST = 1: native_exp; FAST = 0: exp.
// @temper task cross_entropy
// @temper param BLOCK 256 128 512 1024
// @temper param VEC 4 2
// @temper param UNROLL 2 1 4
// @temper param FAST 0 1
// @temper require 1024 % BLOCK == 0
// @temper launch cross_entropy_fast grid(R) block(BLOCK) args(loss, logits, label, R, V)

#if VEC == 4
#define VLOAD vload4
typedef float4 vt;
#else
#define VLOAD vload2
typedef float2 vt;
#endif

inline float ex(float x)
{
#if FAST
    return native_exp(x);
#else
    return exp(x);
#endif
}

/* (m, s) += (m2, s2); an empty set is (-inf, 0) and changes nothing */
inline void merge(float *m, float *s, float m2, float s2)
{
    if (m2 > *m) {
        *s = *s * ex(*m - m2) + s2;
        *m = m2;
    } else if (m2 != -INFINITY) {
        *s += s2 * ex(m2 - *m);
    }
}

/* n values at v into (m, s): one rescale to the new max, then one exp per value */
inline void absorb(float *m, float *s, const float *v, int n)
{
    float mx = v[0];
    for (int i = 1; i < n; i++)
        mx = fmax(mx, v[i]);
    if (mx > *m) {
        *s *= ex(*m - mx);
        *m = mx;
    }
    for (int i = 0; i < n; i++)
        *s += ex(v[i] - *m);
}

inline void put(vt a, float *f)
{
#if VEC == 4
    f[0] = a.x, f[1] = a.y, f[2] = a.z, f[3] = a.w;
#else
    f[0] = a.x, f[1] = a.y;
#endif
}

__kernel void __attribute__((reqd_work_group_size(BLOCK, 1, 1)))
cross_entropy_fast(__global float *loss, __global const float *logits, __global const int *label, int R, int V)
{
    __local float rm[BLOCK], rs[BLOCK];
    const int tid = get_local_id(0), row = get_group_id(0);
    __global const float *x = logits + (size_t)row * V;
    const int vec = V % VEC == 0 && (((size_t)logits) & (4 * VEC - 1)) == 0;
    const int nv = vec ? V / VEC : 0; /* whole vectors */
    float m = -INFINITY, s = 0.0f;
    const int nfull = nv / (UNROLL * BLOCK); /* rounds in which every work-item has UNROLL vectors */
    for (int r = 0; r < nfull; r++) {
        float f[UNROLL * VEC];
        for (int k = 0; k < UNROLL; k++)
            put(VLOAD(r * UNROLL * BLOCK + k * BLOCK + tid, x), f + k * VEC);
        absorb(&m, &s, f, UNROLL * VEC);
    }
    const int rest = nfull * UNROLL * BLOCK;
    for (int k = 0; k * BLOCK < nv - rest; k++) {
        const int j = rest + k * BLOCK + tid;
        if (j < nv) {
            float f[VEC];
            put(VLOAD(j, x), f);
            absorb(&m, &s, f, VEC);
        }
    }
    for (int i = nv * VEC + tid; i < V; i += BLOCK) { /* the rest, one value at a time */
        const float v = x[i];
        absorb(&m, &s, &v, 1);
    }
    /* two levels, two barriers (a tree would take log2(BLOCK), and each costs a CPU runtime such as
     * PoCL a pass over the work-group): 16 work-items merge BLOCK/16 pairs each, then one merges those */
    rm[tid] = m;
    rs[tid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (tid < 16) {
        for (int i = tid + 16; i < BLOCK; i += 16)
            merge(&m, &s, rm[i], rs[i]);
        rm[tid] = m;
        rs[tid] = s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (tid == 0)
        for (int i = 1; i < 16 && i < BLOCK; i++)
            merge(&m, &s, rm[i], rs[i]);
    if (tid == 0)
        loss[row] = (m - x[label[row]]) + log(s);
}
