// A tunable sum for bandwidth in two deterministic launches (the OpenCL twin of fast.cu; the
// in-group reduction is a local-memory tree instead of warp shuffles). The first: a grid of
// min(132*GRID, tiles) work-groups walks the input in tiles of BLOCK*ILP vectors of VEC floats
// with a grid-stride loop; each work-item issues its ILP vector loads of a tile before adding them
// into ILP*VEC independent accumulators, full tiles without bounds checks; the < VEC elements past
// the last whole vector (or all of them if x is not VEC*4-byte aligned) go through a scalar loop.
// The accumulators are summed pairwise, the group reduces in local memory and writes one partial
// sum. The second launch, one work-group, adds the partial sums in a fixed order.
// @temper task reduce_sum
// @temper param VEC 4 2 1
// @temper param BLOCK 256 128 512 1024
// @temper param ILP 4 1 2 8
// @temper param GRID 8 1 2 4 16 32
// @temper require GRID * BLOCK <= 2048
// @temper require VEC * ILP <= 16
// @temper scratch partial f32 132 * GRID
// @temper require 1024 % BLOCK == 0
// @temper launch partial_sums grid(min(132 * GRID, ceil_div(N, BLOCK * VEC * ILP))) block(BLOCK) args(partial, x, N)
// @temper launch final_sum grid(1) block(256) args(out, partial, N)

#define FBLOCK 256

#if VEC == 4
typedef float4 vec_t;
#define VACC(acc, v) ((acc)[0] += (v).x, (acc)[1] += (v).y, (acc)[2] += (v).z, (acc)[3] += (v).w)
#elif VEC == 2
typedef float2 vec_t;
#define VACC(acc, v) ((acc)[0] += (v).x, (acc)[1] += (v).y)
#else
typedef float vec_t;
#define VACC(acc, v) ((acc)[0] += (v))
#endif

/* Tree sum of buf[0..nt) into buf[0]; every work-item of the group calls it with its value. */
inline float group_sum(__local float *buf, float v, int nt)
{
    const int t = get_local_id(0);
    buf[t] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = nt / 2; s > 0; s >>= 1) {
        if (t < s)
            buf[t] += buf[t + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return buf[0];
}

__kernel __attribute__((reqd_work_group_size(BLOCK, 1, 1))) void
partial_sums(__global float *restrict partial, __global const float *restrict x, int N)
{
    __local float buf[BLOCK];
    const size_t n = (size_t)N;
    const size_t nv = (((size_t)x) & (sizeof(vec_t) - 1)) == 0 ? n / VEC : 0;
    __global const vec_t *xv = (__global const vec_t *)x;
    const size_t tile = (size_t)BLOCK * ILP;
    const size_t ntiles = (nv + tile - 1) / tile;
    const size_t lid = get_local_id(0);

    float acc[ILP * VEC];
    for (int i = 0; i < ILP * VEC; i++)
        acc[i] = 0.0f;

    for (size_t t = get_group_id(0); t < ntiles; t += get_num_groups(0)) {
        const size_t base = t * tile + lid;
        if ((t + 1) * tile <= nv) {
            vec_t v[ILP];
            for (int u = 0; u < ILP; u++)
                v[u] = xv[base + (size_t)u * BLOCK];
            for (int u = 0; u < ILP; u++)
                VACC(acc + u * VEC, v[u]);
        } else {
            for (int u = 0; u < ILP; u++) {
                size_t i = base + (size_t)u * BLOCK;
                if (i < nv) {
                    vec_t v = xv[i];
                    VACC(acc + u * VEC, v);
                }
            }
        }
    }
    const size_t stride = get_num_groups(0) * (size_t)BLOCK;
    for (size_t i = nv * VEC + get_group_id(0) * (size_t)BLOCK + lid; i < n; i += stride)
        acc[0] += x[i];

    for (int w = 1; w < ILP * VEC; w *= 2)
        for (int i = 0; i + w < ILP * VEC; i += 2 * w)
            acc[i] += acc[i + w];
    float s = group_sum(buf, acc[0], BLOCK);
    if (lid == 0)
        partial[get_group_id(0)] = s;
}

__kernel __attribute__((reqd_work_group_size(FBLOCK, 1, 1))) void
final_sum(__global float *out, __global const float *restrict partial, int N)
{
    __local float buf[FBLOCK];
    const long per = (long)BLOCK * VEC * ILP;
    const long tiles = ((long)N + per - 1) / per;
    const int nparts = (int)(tiles < 132L * GRID ? tiles : 132L * GRID);
    float s = 0.0f;
    for (int j = get_local_id(0); j < nparts; j += FBLOCK)
        s += partial[j];
    s = group_sum(buf, s, FBLOCK);
    if (get_local_id(0) == 0)
        out[0] = s;
}
