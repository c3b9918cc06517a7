// OpenCL twin of llmc_layernorm_kernel1_serial.cu: karpathy/llm.c, dev/cuda/layernorm_forward.cu,
// layernorm_forward_kernel1 (one work-item per row, two serial passes), mean and rstd into
// scratch. Also holds tasks/L1/layernorm's claim that one sequential chain per 1024-wide row
// passes the N(100, 1) shape (up to 5.1e-4 in simulation, under atol 1e-3).
// Expected: correct.
// @expect correct
// @temper task layernorm
// @temper scratch mean f32 R
// @temper scratch rstd f32 R
// @temper launch layernorm_forward_kernel1 grid(ceil_div(R, 64)) block(64) args(y, mean, rstd, x, gamma, beta, R, C)
__kernel void layernorm_forward_kernel1(__global float *out, __global float *mean, __global float *rstd,
                                        __global const float *inp, __global const float *weight,
                                        __global const float *bias, int N, int C)
{
    int idx = get_global_id(0);
    if (idx >= N)
        return;
    __global const float *x = inp + (size_t)idx * C;
    float m = 0.0f;
    for (int i = 0; i < C; i++)
        m += x[i];
    m = m / C;
    float v = 0.0f;
    for (int i = 0; i < C; i++)
        v += (x[i] - m) * (x[i] - m);
    v = v / C;
    float s = 1.0f / sqrt(v + 1e-5f);
    __global float *o = out + (size_t)idx * C;
    for (int i = 0; i < C; i++)
        o[i] = s * (x[i] - m) * weight[i] + bias[i];
    mean[idx] = m;
    rstd[idx] = s;
}
