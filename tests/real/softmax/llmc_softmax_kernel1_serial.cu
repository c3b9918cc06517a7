// Ported from karpathy/llm.c, dev/cuda/softmax_forward.cu, softmax_forward_kernel1 (one thread
// per row, three serial passes over the row: max, exp and sum into the output, divide).
// Expected: correct. The serial sum of up to 65,537 exps errs by about 1e-4 relative at worst,
// inside rtol 2e-4 (the task's note); rows start at i * C in int, which fits every shape.
// @expect correct
// @temper task softmax
// @temper param BLOCK 128
// @temper launch softmax_forward_kernel1 grid(ceil_div(R, BLOCK)) block(BLOCK) args(y, x, R, C)
extern "C" __global__ void softmax_forward_kernel1(float *out, const float *inp, int N, int C)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N)
        return;
    const float *row = inp + i * C;
    float *o = out + i * C;
    float maxval = -INFINITY;
    for (int j = 0; j < C; j++)
        maxval = row[j] > maxval ? row[j] : maxval;
    float sum = 0.0f;
    for (int j = 0; j < C; j++) {
        o[j] = expf(row[j] - maxval);
        sum += o[j];
    }
    for (int j = 0; j < C; j++)
        o[j] /= sum;
}
