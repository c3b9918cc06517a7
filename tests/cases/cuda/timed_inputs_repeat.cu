// Correct: a vector_add that watches its own inputs (the CUDA twin of the OpenCL case). At the bench
// shape one block of 1024 threads does all the work (so a launch takes tens of milliseconds and a
// 0.2 s budget makes two warm-ups); thread 0 hashes 256 sampled elements of a and b and, from the
// ninth launch on, keeps each hash in __device__ memory; a launch whose inputs hash like an earlier
// kept one writes NaN into c[0]. Incorrect while timed launches alternated between two input sets;
// with new inputs before every timed launch no hash repeats.
// @expect correct
// @temper task vector_add
// @temper launch vector_add grid(1) block(1024) args(c, a, b, N)
#define LATE 8
#define KEEP 256
__device__ unsigned launches;
__device__ unsigned seen[KEEP];
__device__ unsigned nseen;

extern "C" __global__ void vector_add(float *c, const float *a, const float *b, int n)
{
    __shared__ int repeat;
    int bench = n == 268435456;
    if (threadIdx.x == 0) {
        repeat = 0;
        if (bench) {
            unsigned h = 2166136261u;
            for (int j = 0; j < 256; j++)
                h = (h ^ __float_as_uint(a[(j * 65599) % n]) ^ (__float_as_uint(b[(j * 40503) % n]) << 1)) * 16777619u;
            unsigned l = launches++;
            if (l >= LATE) {
                for (unsigned k = 0; k < nseen && k < KEEP; k++)
                    repeat |= seen[k] == h;
                seen[nseen++ % KEEP] = h;
            }
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        c[i] = a[i] + b[i];
    if (repeat && threadIdx.x == 0)
        c[0] = __int_as_float(0x7fc00000);
}
