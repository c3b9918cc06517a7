// Correct: vector_add with float4 loads. Each work-item adds four elements with vload4/vstore4
// (which need only float alignment); the work-item that holds the last N % 4 elements adds them
// one by one.
// @expect correct
// @temper task vector_add
// @temper launch add4 grid(ceil_div(ceil_div(N, 4), 256)) block(256) args(c, a, b, N)
__kernel void add4(__global float *c, __global const float *a, __global const float *b, int N)
{
    int q = get_global_id(0); /* index of a group of four elements */
    int i = 4 * q;
    if (i + 3 < N) {
        vstore4(vload4(q, a) + vload4(q, b), q, c);
    } else {
        for (; i < N; i++) /* scalar tail */
            c[i] = a[i] + b[i];
    }
}
