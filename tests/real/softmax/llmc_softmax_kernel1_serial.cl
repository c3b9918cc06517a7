// OpenCL twin of llmc_softmax_kernel1_serial.cu: karpathy/llm.c, dev/cuda/softmax_forward.cu,
// softmax_forward_kernel1 (one work-item per row, three serial passes). Also holds
// tasks/L1/softmax's claim that one thread summing a 65537-long row stays inside rtol 2e-4.
// Expected: correct.
// @expect correct
// @temper task softmax
// @temper launch softmax_forward_kernel1 grid(ceil_div(R, 64)) block(64) args(y, x, R, C)
__kernel void softmax_forward_kernel1(__global float *out, __global const float *inp, int N, int C)
{
    int i = get_global_id(0);
    if (i >= N)
        return;
    __global const float *row = inp + (size_t)i * C;
    __global float *o = out + (size_t)i * C;
    float maxval = -INFINITY;
    for (int j = 0; j < C; j++)
        maxval = row[j] > maxval ? row[j] : maxval;
    float sum = 0.0f;
    for (int j = 0; j < C; j++) {
        o[j] = exp(row[j] - maxval);
        sum += o[j];
    }
    for (int j = 0; j < C; j++)
        o[j] /= sum;
}
