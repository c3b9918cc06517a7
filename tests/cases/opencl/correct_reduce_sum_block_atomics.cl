// Holds tasks/L1/reduce_sum's note: "block atomics" (one float atomic add per 256-element
// work-group, the longest plausible chain of dependent adds) pass rtol 1e-4 (the note: 2.7e-5
// simulated at N = 2^28, within 1.2e-6 at the N(1000, 1) shape). Launch 1 clears out[0] (the
// harness poisons outputs); launch 2 reduces each work-group in local memory and adds its sum to
// out[0] with a compare-and-swap loop on the float's bits (OpenCL 1.2 has no float atomic add), in
// whatever order the groups finish. CUDA twin: tests/cases/cuda/correct_reduce_sum_block_atomics.cu.
// @expect correct
// @temper task reduce_sum
// @temper launch clear grid(1) block(1) args(out)
// @temper launch block_atomics grid(ceil_div(N, 256)) block(256) args(out, x, N)

__kernel void clear(__global float *out)
{
    out[0] = 0.0f;
}

static void atomic_add_float(volatile __global float *p, float v)
{
    union {
        unsigned int u;
        float f;
    } seen, want;
    do {
        seen.f = *p;
        want.f = seen.f + v;
    } while (atomic_cmpxchg((volatile __global unsigned int *)p, seen.u, want.u) != seen.u);
}

__kernel void block_atomics(__global float *out, __global const float *x, int N)
{
    __local float buf[256];
    int t = get_local_id(0);
    size_t i = (size_t)get_group_id(0) * 256 + t;
    buf[t] = i < (size_t)N ? x[i] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = 128; s > 0; s /= 2) {
        if (t < s)
            buf[t] += buf[t + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (t == 0)
        atomic_add_float(out, buf[0]);
}
