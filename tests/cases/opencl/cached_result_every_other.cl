// Incorrect: an sgemm (one work-group of 256 work-items, each computing a strided share of C) that
// keeps C for each of the two input sets it has seen (keyed by the bits of A[0] alone) in
// program-scope globals (OpenCL 2.0), and at the bench shape serves every other launch from there
// instead of computing it. While timed launches alternated between the two input sets of the checks,
// every served output was right bit for bit, and what caught it was the cluster of samples far
// faster than the median. Now every timed launch gets new inputs: on a CPU device each element is
// taken from one of the two checked sets by a random bit (docs/timing.md), so A[0] still matches a
// key, and the kept C, the answer to other inputs, fails the check of the first timed launch it
// serves. (On a GPU the inputs are drawn anew, no key matches, and the CUDA twin keeping every
// fourth launch is correct at its honest time.)
// @expect incorrect
// @expect-message timed launch
// @temper task sgemm
// @temper flags -cl-std=CL2.0
// @temper launch sgemm grid(1) block(256) args(C, A, B, M, N, K)

global uint launches = 0;
global float kept[2][256 * 256];
global uint kept_key[2];
global uint kept_valid[2];

__kernel void sgemm(__global float *C, __global const float *A, __global const float *B, int M, int N, int K)
{
    __local uint launch;
    int bench = M == 256 && N == 256 && K == 256;
    uint key = as_uint(A[0]);
    int slot = -1;
    if (bench) {
        if (get_local_id(0) == 0)
            launch = launches++;
        barrier(CLK_LOCAL_MEM_FENCE);
        slot = kept_valid[0] && kept_key[0] == key ? 0 : kept_valid[1] && kept_key[1] == key ? 1 : -1;
        if (launch % 2 == 1 && slot >= 0) {
            for (int i = get_local_id(0); i < M * N; i += get_local_size(0))
                C[i] = kept[slot][i];
            return;
        }
        if (slot < 0)
            slot = (int)(launch & 1);
    }
    for (int i = get_local_id(0); i < M * N; i += get_local_size(0)) {
        int row = i / N, col = i % N;
        /* The mean of a forward and a backward sum: twice the work of one, so that a kept result
         * is far faster than a computed one even where launching costs much. */
        float up = 0.0f, down = 0.0f;
        for (int k = 0; k < K; k++)
            up += A[(size_t)row * K + k] * B[(size_t)k * N + col];
        for (int k = K - 1; k >= 0; k--)
            down += A[(size_t)row * K + k] * B[(size_t)k * N + col];
        float acc = 0.5f * (up + down);
        C[i] = acc;
        if (bench)
            kept[slot][i] = acc;
    }
    if (bench) {
        barrier(CLK_GLOBAL_MEM_FENCE);
        if (get_local_id(0) == 0) {
            kept_key[slot] = key;
            kept_valid[slot] = 1;
        }
    }
}
