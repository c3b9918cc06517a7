// Wrong on purpose: the leaky slope is 0.01, not the 0.05 of the problem.
// @temper task leaky_gelu
// @temper launch leaky_gelu grid(ceil_div(batch_size * dim, 256)) block(256) args(out, x, batch_size, dim)
__kernel void leaky_gelu(__global float *out, __global const float *x, int batch_size, int dim)
{
    size_t i = get_global_id(0);
    if (i >= (size_t)batch_size * (size_t)dim)
        return;
    float v = x[i];
    float g = 0.5f * v * (1.0f + tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
    out[i] = g > 0.0f ? g : 0.01f * g;
}
