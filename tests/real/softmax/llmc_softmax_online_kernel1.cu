// Ported from karpathy/llm.c, dev/cuda/softmax_forward.cu, softmax_forward_online_kernel1 (one
// thread per row, the online normalizer: the running sum is rescaled whenever the max grows).
// Expected: correct: the rescaling keeps every exp argument <= 0, so nothing overflows on the
// N(80, 4) inputs, and the serial sum stays inside rtol 2e-4.
// @expect correct
// @temper task softmax
// @temper launch softmax_forward_online_kernel1 grid(ceil_div(R, 128)) block(128) args(y, x, R, C)
extern "C" __global__ void softmax_forward_online_kernel1(float *out, const float *inp, int N, int C)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N)
        return;
    const float *row = inp + i * C;
    float *o = out + i * C;
    float maxval = -INFINITY, sum = 0.0f;
    for (int j = 0; j < C; j++) {
        float prev = maxval;
        if (row[j] > maxval) {
            maxval = row[j];
            sum = sum * expf(prev - maxval) + expf(row[j] - maxval);
        } else {
            sum += expf(row[j] - maxval);
        }
    }
    for (int j = 0; j < C; j++)
        o[j] = expf(row[j] - maxval) / sum;
}
