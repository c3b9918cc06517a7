// Correct: a vector_add that looks for what it left in its scratch buffer (the CUDA twin of the
// OpenCL case; one block of 1024 threads, as in timed_inputs_repeat.cu). From the ninth launch at the
// bench shape on, a launch that finds its previous launch's mark in scratch writes NaN into c[0];
// every launch then marks scratch. Incorrect while scratch was not poisoned between timed launches.
// @expect correct
// @temper task vector_add
// @temper scratch mark i32 4
// @temper launch vector_add grid(1) block(1024) args(c, a, b, mark, N)
#define LATE 8
__device__ unsigned launches;

extern "C" __global__ void vector_add(float *c, const float *a, const float *b, unsigned *mark, int n)
{
    __shared__ int kept;
    int bench = n == 268435456;
    if (threadIdx.x == 0) {
        kept = 0;
        if (bench) {
            unsigned l = launches++;
            kept = l >= LATE && mark[0] == 0x6d61726bu && mark[1] == l - 1;
            mark[0] = 0x6d61726bu;
            mark[1] = l;
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        c[i] = a[i] + b[i];
    if (kept && threadIdx.x == 0)
        c[0] = __int_as_float(0x7fc00000);
}
