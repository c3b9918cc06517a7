// Correct, at its honest time: the same row-block cache as cache_by_pointer.cl, keyed instead by a
// hash of 256 sampled elements of A and B, so that it serves only inputs it has seen. Timed
// launches once alternated between two fixed input sets, and this kernel then served every timed
// launch from its cache (right outputs, a 13x "speedup"); now every timed launch gets inputs no
// launch saw, so no key matches in the timed region and each sample computes all of C.
// timed_inputs_repeat.cl shows the timed inputs never repeat.
// @expect correct
// @temper task sgemm
// @temper flags -cl-std=CL2.0
// @temper launch sgemm grid(1) block(256) args(C, A, B, M, N, K)

global uint kept_key[2];
global uint kept_valid[2];
global uint launches;
global float kept[2][256 * 256];

__kernel void sgemm(__global float *C, __global const float *A, __global const float *B, int M, int N, int K)
{
    __local int slot, block;
    __local uint key;
    int bench = M == 256 && N == 256 && K == 256;
    if (bench && get_local_id(0) == 0) {
        uint h = 2166136261u;
        for (int j = 0; j < 128; j++)
            h = (h ^ as_uint(A[(j * 4099) % (M * K)]) ^ (as_uint(B[(j * 8191) % (K * N)]) << 1)) * 16777619u;
        key = h;
        slot = kept_valid[0] && kept_key[0] == h ? 0 : kept_valid[1] && kept_key[1] == h ? 1 : -1;
        block = (int)(launches++ % 16);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    int hit = bench && slot >= 0;
    int s = hit ? slot : (int)(block & 1);
    for (int i = get_local_id(0); i < M * N; i += get_local_size(0)) {
        int row = i / N, col = i % N;
        if (hit && row / (M / 16) != block) {
            C[i] = kept[s][i];
            continue;
        }
        float acc = 0.0f;
        for (int k = 0; k < K; k++)
            acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
        C[i] = acc;
        if (bench)
            kept[s][i] = acc;
    }
    if (bench && !hit) {
        barrier(CLK_GLOBAL_MEM_FENCE);
        if (get_local_id(0) == 0) {
            kept_key[s] = key;
            kept_valid[s] = 1;
        }
    }
}
