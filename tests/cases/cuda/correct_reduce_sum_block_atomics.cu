// Holds tasks/L1/reduce_sum's note: "block atomics" (one float atomicAdd per 256-element block, the
// longest plausible chain of dependent adds, 2^20 at the GPU bench shape N = 2^28) pass rtol 1e-4:
// the note simulated them at 2.7e-5 there, and within 1.2e-6 at the N(1000, 1) shape. Launch 1
// clears out[0] (the harness poisons outputs); launch 2 reduces each block in shared memory and adds
// its sum with atomicAdd, in whatever order the blocks finish. Must pass every check shape and the
// bench shape.
// @expect correct
// @temper task reduce_sum
// @temper launch clear grid(1) block(1) args(out)
// @temper launch block_atomics grid(ceil_div(N, 256)) block(256) args(out, x, N)

extern "C" __global__ void clear(float *out)
{
    out[0] = 0.0f;
}

extern "C" __global__ void block_atomics(float *out, const float *x, int N)
{
    __shared__ float buf[256];
    int t = threadIdx.x;
    size_t i = (size_t)blockIdx.x * 256 + t;
    buf[t] = i < (size_t)N ? x[i] : 0.0f;
    __syncthreads();
    for (int s = 128; s > 0; s /= 2) {
        if (t < s)
            buf[t] += buf[t + s];
        __syncthreads();
    }
    if (t == 0)
        atomicAdd(out, buf[0]);
}
