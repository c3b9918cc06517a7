// Correct, at its honest time: the row-block cache of cache_by_pointer.cl held in a scratch buffer
// (the harness's own memory, no OpenCL 2.0 globals): two slots, each a header (A's address, a hash of
// sampled elements of A and B, a count) and a copy of C. Scratch buffers were poisoned before check
// runs but not between timed launches, and timed inputs alternated between two sets, so every timed
// launch was served from it (17.6x on PoCL). Now scratch is poisoned and inputs are new before every
// timed launch: no header matches there, and each sample computes all of C. timed_scratch_kept.cl
// shows nothing written to scratch survives into a timed launch.
// @expect correct
// @temper task sgemm
// @temper scratch kept f32 2*(M*N+4)
// @temper launch sgemm grid(1) block(256) args(C, A, B, kept, M, N, K)

#define MAGIC 0x6b657074u

__kernel void sgemm(__global float *C, __global const float *A, __global const float *B, __global float *kept, int M,
                    int N, int K)
{
    __local int hit, slot, block;
    int bench = M == 256 && N == 256 && K == 256;
    __global uint *head[2] = {(__global uint *)kept, (__global uint *)(kept + M * N + 4)};
    uint ptr = (uint)((ulong)A >> 4);
    if (get_local_id(0) == 0) {
        uint h = 2166136261u;
        for (int j = 0; j < 128; j++)
            h = (h ^ as_uint(A[(j * 4099) % (M * K)]) ^ (as_uint(B[(j * 8191) % (K * N)]) << 1)) * 16777619u;
        int s = -1;
        for (int k = 0; k < 2; k++)
            if (head[k][0] == MAGIC && head[k][1] == ptr && head[k][2] == h)
                s = k;
        hit = bench && s >= 0;
        slot = s >= 0 ? s : head[0][0] == MAGIC && head[1][0] != MAGIC;
        block = (int)(head[slot][3] % 16);
        head[slot][0] = 0;
        head[slot][1] = ptr;
        head[slot][2] = h;
        head[slot][3] = hit ? head[slot][3] + 1 : 1;
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    __global float *rows = kept + slot * (M * N + 4) + 4;
    for (int i = get_local_id(0); i < M * N; i += get_local_size(0)) {
        int row = i / N, col = i % N;
        if (hit && row / (M / 16) != block) {
            C[i] = rows[i];
            continue;
        }
        float acc = 0.0f;
        for (int k = 0; k < K; k++)
            acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
        C[i] = acc;
        rows[i] = acc;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (get_local_id(0) == 0)
        head[slot][0] = MAGIC;
}
