// Tensor maps end to end: a vector_add that reads a and b through TMA. Each block's thread 0 arms
// an mbarrier with the 2 KiB it expects and issues one 1-D box of 256 floats of each input
// (tensormap(a, 0, 256): no swizzle); a block past the end gets zeros for the missing elements
// (TMA's out-of-bounds fill), and only i < N is stored. Correct at every check shape (N = 1, odd N,
// the 65,537 shapes) only if temper encodes the maps over the right buffers with the right sizes
// and passes them by value where the kernel's parameters are.
// @expect correct
// @temper task vector_add
// @temper launch add_tma grid(ceil_div(N, 256)) block(256) smem(2 * 256 * 4 + 256) args(c, tensormap(a, 0, 256), tensormap(b, 0, 256), N)

struct __align__(64) tmap_t {
    unsigned long long v[16];
};

extern "C" __global__ void add_tma(float *c, const __grid_constant__ tmap_t ta, const __grid_constant__ tmap_t tb, int N)
{
    extern __shared__ __align__(128) unsigned char smem_raw[];
    const unsigned base = ((unsigned)__cvta_generic_to_shared(smem_raw) + 127u) & ~127u; /* TMA wants 128 */
    const unsigned sa = base, sb = base + 1024, bar = base + 2048;
    const int x0 = blockIdx.x * 256;
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar) : "memory");
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(2 * 256 * 4) : "memory");
        asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2}], [%3];\n" ::"r"(sa),
                     "l"((unsigned long long)&ta), "r"(x0), "r"(bar)
                     : "memory");
        asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2}], [%3];\n" ::"r"(sb),
                     "l"((unsigned long long)&tb), "r"(x0), "r"(bar)
                     : "memory");
    }
    __syncthreads(); /* the barrier is initialised before anyone waits on it */
    asm volatile("{\n"
                 ".reg .pred done;\n"
                 "WAIT:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n"
                 "@!done bra WAIT;\n"
                 "}\n" ::"r"(bar)
                 : "memory");
    const int i = x0 + threadIdx.x;
    float a, b;
    asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(a) : "r"(sa + 4 * threadIdx.x));
    asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(b) : "r"(sb + 4 * threadIdx.x));
    if (i < N)
        c[i] = a + b;
}
