// Correct output, with a shared-memory race compute-sanitizer's racecheck reports: after a barrier,
// thread 0 writes a __shared__ value while the other threads of its block read it, with no
// barrier between (a read-after-write hazard across warps). Each thread reads 1 or 2, never 3, so
// the output is right either way: without --sanitize the verdict is correct; --sanitize lists
// racecheck's hazard and fails it, as a race is a bug whatever this run's output.
// (A write of the same value by every thread is not reported by racecheck: seen on an H200.)
// @temper task vector_add
// @temper launch vector_add_race grid(ceil_div(N, 128)) block(128) args(c, a, b, N)
// @expect correct
extern "C" __global__ void vector_add_race(float *__restrict__ c, const float *__restrict__ a,
                                           const float *__restrict__ b, int n)
{
    __shared__ int s;
    if (threadIdx.x == 0)
        s = 1;
    __syncthreads();
    if (threadIdx.x == 0)
        s = 2; /* the other warps read s below, unordered with this write */
    int v = s;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i] + (v == 3 ? 1.0f : 0.0f);
}
