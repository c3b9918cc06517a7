// Incorrect: an sgemm (one work-group of 256 work-items, each computing a strided share of C) that
// keeps C for each of the two input sets it has seen (keyed by the bits of A[0]) in program-scope
// globals (OpenCL 2.0), and at the bench shape serves every other launch from there instead of
// computing it. Every output is right, bit for bit, so verifying outputs cannot see it; the launch
// takes about a thousandth of a computed one, under the roofline floor of the device only on a
// fast CPU: what catches it is the cluster of samples far faster than the median. Every other
// launch (the CUDA twin keeps every fourth): on a loaded 2-core machine the least count of timed
// samples (10) must still hold two or more kept ones after the load has stretched some of them.
// @expect incorrect
// @expect-message did less work
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
