// A vector_add that, for STRAY > 0, writes STRAY words of garbage from SKIP words past the end of
// the whole allocation that holds its scratch buffer and the buffer's guard zones (4 KiB each side,
// the data rounded up to 4 KiB, as on PoCL), and gets element 0 of its output wrong. On a backend
// whose kernels run in the worker's address space (PoCL), the stray words land in the worker's
// heap, where no guard zone sees them: with the defaults, a worker that was not replaced crashed
// on the next, correct candidate. The candidate is incorrect or crashes; what must hold is that
// the next candidate is judged by a fresh worker. With STRAY = 0 it is correct.
// @temper task vector_add
// @temper param STRAY 64 0 256 1024
// @temper param SKIP 4 64 256
// @temper scratch acc f32 N
// @temper launch sum grid(ceil_div(N, 256)) block(256) args(acc, a, b, N)
// @temper launch store grid(ceil_div(N, 256)) block(256) args(c, acc, N)

__kernel void sum(__global float *acc, __global const float *a, __global const float *b, int N)
{
    int i = get_global_id(0);
    if (i < N)
        acc[i] = a[i] + b[i];
    if (i == 0) {
        long end = ((long)N * 4 + 4095) / 4096 * 4096 + 4096; /* bytes from acc to the allocation's end */
        for (int k = 0; k < STRAY; k++)
            ((__global uint *)acc)[end / 4 + SKIP + k] = 0x41414141u + (uint)k;
    }
}

__kernel void store(__global float *c, __global const float *acc, int N)
{
    int i = get_global_id(0);
    if (i < N)
        c[i] = i == 0 && STRAY > 0 ? acc[i] + 1.0f : acc[i];
}
