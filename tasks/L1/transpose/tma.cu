// A tunable Hopper transpose through TMA: persistent blocks, a ring of STAGES input tiles that the
// copy engine fills, a shared-memory transpose by 16-byte accesses, and TMA stores of y.
//
// Why a third kernel (fast.cu and swizzle.cu both tune to 0.530-0.532 ms at 16384 x 16384, 94.3 %
// of the calibrated copy; 1.05x torch.compile needs 0.5205 ms, 95.8 %): in both, the loads a block
// has in flight are what its threads hold in registers, issued in a burst per tile and then none
// while the tile is written out (swizzle.cu's PB > 0 overlaps one tile at most), so (the hypothesis
// here) the bytes each SM asks DRAM for rise and fall with the phase of its blocks. Here the copy
// engine keeps STAGES tiles of loads in flight per block all the time (2 x 4 x 16 KiB per SM at
// the defaults, against Little's law's 16-32 KiB for 16 GB/s of reads per SM at 1-2 us of loaded
// latency), independent of registers and of the store phase; each load box is TR rows of 128
// bytes and each store box TC rows of 128 bytes (whole, aligned L2 lines; L2 fetches 256 bytes per
// line pair, so TC >= 64 reads 256-byte pieces); the threads execute no global memory instruction
// and no address arithmetic for global memory, only 8 LDS.128/STS.128 per 4 x 4 micro-tile.
// Chosen over a software-pipelined cp.async kernel (idea 2 of issue 14), which could keep as many
// stages in flight: cp.async costs every thread one instruction and one address per 16 bytes
// (LDGSTS: 32 warp instructions per 16 KiB tile against 2 TMA instructions from one thread), its stores
// would still be STG.128 from registers, and its completion is per thread (wait_group, then a
// barrier) where TMA's is one mbarrier per stage.
//
// Mechanism. Tile t (TR x rows, TC x columns, in fast.cu's GROUP order) goes to block t % grid, in
// turn. Thread 0 initialises one "full" mbarrier per stage, then keeps the ring filled: for each
// tile it arms the stage's barrier with the tile's bytes and issues TC/32 boxes of
// tensormap(x, 128, 32, TR) (32 columns by TR rows, 128-byte swizzle: in shared memory, 16-byte
// chunk c of box row r sits at chunk c ^ (r % 8)). Every thread waits on the barrier, then moves
// 4 x 4 micro-tiles: four LDS.128 of four x rows, a transpose in registers, four STS.128 into an
// output tile laid out as TR/32 boxes of tensormap(y, 128, 32, TC) (TC y rows by 32 y columns, the
// same swizzle). Lanes are mapped so that both phases are conflict-free: within a quarter warp,
// lane l takes micro-tile row a = 8A + l and micro-tile column q = (l + s) % 8; its reads land on
// chunks q ^ 4(l % 2) ^ i and its writes on chunks l ^ 4(q % 2) ^ e, eight different 16-byte bank
// groups for each i and e. Then every thread fences its shared writes to the async proxy, one
// __syncthreads, and thread 0 stores the output tile with TR/32 TMA stores (one bulk group) and
// refills the stage it just freed with the tile STAGES ahead. NY output tiles rotate; before the
// barrier thread 0 waits until the copy engine has read the one the next tile will overwrite
// (cp.async.bulk.wait_group.read NY - 2), so one barrier per tile serves both directions.
// Edges: TMA fills zeros past x's edges and clips stores at y's, so partial tiles need no code
// (boxes wholly past x's right edge or y's right edge are not issued). Tensor maps need 16-byte row
// pitches, R % 4 == 0 and C % 4 == 0 (the harness's buffers are 256-byte aligned); other shapes
// (check shapes only: 1 x 7, 17 x 33, 127 x 253, 65537 x 3, ...) take transpose_plain, a 32 x 32
// padded shared-memory tile with bounds checks: correct everywhere, never timed at the bench shape.
// Every value is copied, never computed: bit-exact by construction.
//
// Knobs: TR, TC (tile: x rows and columns; the y row pieces are TR * 4 bytes, the x row pieces TC
// * 4); STAGES (input tiles in flight per block); NY (output tiles, 2 or 3: 3 lets a store take two
// tiles' time to be read out); NT (threads; MT = TR * TC / 16 / NT micro-tiles each); PB (blocks
// per SM; grid = SMS * PB, or the tiles if fewer); GROUP (tile order, as fast.cu's: 0 x's
// row-major tile order, G > 0 down the tile columns of G tile rows at a time); HINT (1: loads and
// stores carry an L2 evict_first policy, as nothing is read twice; 0: the default policy).
//
// PREDICTION (written before any GPU run, H200, 16384 x 16384, 2 GiB moved): at the defaults
// (TR=64 TC=64 STAGES=4 NY=2 NT=128 PB=2 GROUP=32 HINT=0: two blocks of 128 threads per SM, each
// 96 KiB of tiles, 128 KiB of loads in flight per SM) 0.521-0.535 ms, most likely about 0.527 ms
// (95 % of copy). Reasoning: the in-flight bytes no longer dip, but the gap to copy is at least as
// likely DRAM-side (reads and writes to scattered 256-byte pieces, not one stream each), which TMA
// does not change, so it should take back part of the 1.6 points, not all. Per SM a 64 x 64 tile
// is due every ~1.05 us (~1900 cycles); a tile's serial path (barrier wait, 8 LDS.128 and 8
// STS.128 per thread, proxy fence, __syncthreads, thread 0's 4 TMA instructions) is a few hundred
// cycles, and the second block covers one block's barrier bubble, so issue should not limit it.
// Most worth trying after the defaults: PB=1 STAGES=6 or 8, TR=128 (512-byte y row pieces: the
// writes in longer runs; with PB=1 STAGES=4 NT=256), HINT=1, NY=3, GROUP=0/8.
// MEASURED (2026-12-01, H200, `bench/gpu.sh run evals tune`, one call): the prediction was wrong.
// The defaults took 0.5631 ms (88.6 % of copy); a 40-point tune spanned 0.562-0.66 ms, its best
// 0.5621 ms (88.8 %) at TR=128 TC=64 STAGES=3 NY=3 NT=256 PB=1 GROUP=0; fast.cu took 0.5301 ms in
// the same call. Correct on every check shape, sanitizer-clean. Keeping every load in flight did
// not close the gap but widened it, which points to the DRAM side (the transposed access pattern)
// rather than the SM: bench/transpose_floor.cu (stage tfloor) measures that pattern without the
// transpose.
// @temper task transpose
// @temper param TR 64 128 32
// @temper param TC 64 128 32
// @temper param STAGES 4 6 8 3 2
// @temper param NY 2 3
// @temper param NT 128 256 512 64
// @temper param PB 2 1
// @temper param GROUP 32 0 8 16
// @temper param HINT 0 1
// @temper require TR * TC / 16 >= NT && NT * PB <= 2048
// @temper require TR * TC / 16 / NT <= 8
// @temper require PB * ((STAGES + NY) * TR * TC * 4 + 3072) <= 228 * 1024
// @temper launch transpose_tma when(R % 4 == 0 && C % 4 == 0) grid(min(ceil_div(R, TR) * ceil_div(C, TC), SMS * PB)) block(NT) smem((STAGES + NY) * TR * TC * 4 + 1024) args(tensormap(y, 128, 32, TC), tensormap(x, 128, 32, TR), R, C)
// @temper launch transpose_plain when(1) grid(ceil_div(C, 32), ceil_div(R, 32)) block(32, 8) args(y, x, R, C)

#define NBX (TC / 32)              /* load boxes per tile: 32 x columns by TR x rows each */
#define NBY (TR / 32)              /* store boxes per tile: 32 y columns by TC y rows each */
#define BOXX (TR * 128)            /* bytes of one load box */
#define BOXY (TC * 128)            /* bytes of one store box */
#define TILE_BYTES (TR * TC * 4)   /* one input or output tile */
#define MT (TR * TC / 16 / NT)     /* micro-tiles per thread per tile */

/* A tensor map as the driver encodes it: 128 opaque bytes, passed by value (__grid_constant__). */
struct __align__(64) tmap_t {
    unsigned long long v[16];
};

/* The origin (row0, col0) in x of tile t (fast.cu's and swizzle.cu's orders) */
__device__ __forceinline__ void tile_origin(int t, int R, int C, int *row0, int *col0)
{
    const int nbx = (C + TC - 1) / TC;
#if GROUP > 0
    const int nby = (R + TR - 1) / TR;
    const int per = GROUP * nbx, first = t / per * GROUP, rows = min(GROUP, nby - first), w = t % per;
    *row0 = (first + w % rows) * TR;
    *col0 = w / rows * TC;
#else
    *row0 = t / nbx * TR;
    *col0 = t % nbx * TC;
#endif
}

__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity)
{
    asm volatile("{\n"
                 ".reg .pred done;\n"
                 "WAIT:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra WAIT;\n"
                 "}\n" ::"r"(bar),
                 "r"(parity)
                 : "memory");
}

/* Thread 0: tile (row0, col0) of x into the input tile at dst, completing bar by its bytes; the
 * boxes wholly right of x's last column are not issued (their shared memory is left as it was: it
 * only reaches y rows past y's edge, which the stores clip). */
__device__ __forceinline__ void load_tile(const tmap_t *tmx, unsigned dst, unsigned bar, int row0, int col0, int C,
                                          unsigned long long policy)
{
    const int nb = min(NBX, (C - col0 + 31) / 32);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(nb * BOXX) : "memory");
    for (int b = 0; b < nb; b++) {
#if HINT
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint "
                     "[%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst + b * BOXX),
                     "l"((unsigned long long)tmx), "r"(col0 + 32 * b), "r"(row0), "r"(bar), "l"(policy)
                     : "memory");
#else
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
                     "[%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst + b * BOXX),
                     "l"((unsigned long long)tmx), "r"(col0 + 32 * b), "r"(row0), "r"(bar)
                     : "memory");
        (void)policy;
#endif
    }
}

/* Thread 0: the output tile at src into y (y rows col0.., y columns row0..) as one bulk group; the
 * boxes wholly right of y's last column are not issued, the others are clipped by the copy engine. */
__device__ __forceinline__ void store_tile(const tmap_t *tmy, unsigned src, int row0, int col0, int R,
                                           unsigned long long policy)
{
    const int nb = min(NBY, (R - row0 + 31) / 32);
    for (int b = 0; b < nb; b++) {
#if HINT
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group.L2::cache_hint "
                     "[%0, {%1, %2}], [%3], %4;\n" ::"l"((unsigned long long)tmy),
                     "r"(row0 + 32 * b), "r"(col0), "r"(src + b * BOXY), "l"(policy)
                     : "memory");
#else
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                         (unsigned long long)tmy),
                     "r"(row0 + 32 * b), "r"(col0), "r"(src + b * BOXY)
                     : "memory");
        (void)policy;
#endif
    }
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

extern "C" __global__ void __launch_bounds__(NT, PB)
    transpose_tma(const __grid_constant__ tmap_t tmy, const __grid_constant__ tmap_t tmx, int R, int C)
{
    extern __shared__ __align__(16) unsigned char smem_raw[]; /* aligned to 1024 below */
    __shared__ __align__(8) unsigned long long full[STAGES]; /* one per input tile: its bytes have landed */
    /* the 128-byte swizzle repeats every 1024 bytes: every box starts 1024-byte aligned */
    const unsigned raw = (unsigned)__cvta_generic_to_shared(smem_raw);
    const unsigned pad = ((raw + 1023u) & ~1023u) - raw;
    unsigned char *const in = smem_raw + pad;          /* STAGES input tiles */
    unsigned char *const out = in + STAGES * TILE_BYTES; /* NY output tiles */
    const unsigned in_s = raw + pad, out_s = in_s + STAGES * TILE_BYTES;
    const unsigned bar0 = (unsigned)__cvta_generic_to_shared(full);
    const int tiles = ((R + TR - 1) / TR) * ((C + TC - 1) / TC), P = (int)gridDim.x;
    const int mine = (tiles - (int)blockIdx.x + P - 1) / P; /* this block's tiles: blockIdx.x + k * P */
    unsigned long long policy = 0;
#if HINT
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
#endif

    if (threadIdx.x == 0) {
        asm volatile("prefetch.tensormap [%0];\n" ::"l"((unsigned long long)&tmx) : "memory");
        asm volatile("prefetch.tensormap [%0];\n" ::"l"((unsigned long long)&tmy) : "memory");
        for (int s = 0; s < STAGES; s++)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar0 + 8 * s) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        for (int k = 0; k < min(STAGES, mine); k++) {
            int row0, col0;
            tile_origin((int)blockIdx.x + k * P, R, C, &row0, &col0);
            load_tile(&tmx, in_s + k * TILE_BYTES, bar0 + 8 * k, row0, col0, C, policy);
        }
    }
    __syncthreads(); /* the barriers are initialised before anyone waits on them */

    for (int k = 0; k < mine; k++) {
        const int s = k % STAGES, yb = k % NY;
        int row0, col0;
        tile_origin((int)blockIdx.x + k * P, R, C, &row0, &col0);
        mbar_wait(bar0 + 8 * s, (unsigned)(k / STAGES) & 1u);

        const unsigned char *src = in + s * TILE_BYTES;
        unsigned char *dst = out + yb * TILE_BYTES;
        float4 v[MT][4];
#pragma unroll
        for (int u = 0; u < MT; u++) { /* micro-tile (a, 8b + q): x rows 4a..4a+3, columns 32b + 4q.. */
            const int m = (int)threadIdx.x + u * NT, l = m & 7, sh = (m >> 3) & 7, rest = m >> 6;
            const int a = 8 * (rest % NBY) + l, b = rest / NBY, q = (l + sh) & 7;
#pragma unroll
            for (int i = 0; i < 4; i++) /* box b, row 4a + i ((4a + i) % 8 == 4 (l % 2) + i), chunk q */
                v[u][i] = *(const float4 *)(src + b * BOXX + (4 * a + i) * 128 + ((q ^ (4 * (l & 1) + i)) << 4));
        }
#pragma unroll
        for (int u = 0; u < MT; u++) { /* y rows 32b + 4q + e of box a / 8, chunk a % 8 = l */
            const int m = (int)threadIdx.x + u * NT, l = m & 7, sh = (m >> 3) & 7, rest = m >> 6;
            const int A = rest % NBY, b = rest / NBY, q = (l + sh) & 7;
            unsigned char *d = dst + A * BOXY + (32 * b + 4 * q) * 128;
            const int swz = 4 * (q & 1); /* (32b + 4q + e) % 8 == swz + e */
            *(float4 *)(d + 0 * 128 + ((l ^ (swz + 0)) << 4)) = make_float4(v[u][0].x, v[u][1].x, v[u][2].x, v[u][3].x);
            *(float4 *)(d + 1 * 128 + ((l ^ (swz + 1)) << 4)) = make_float4(v[u][0].y, v[u][1].y, v[u][2].y, v[u][3].y);
            *(float4 *)(d + 2 * 128 + ((l ^ (swz + 2)) << 4)) = make_float4(v[u][0].z, v[u][1].z, v[u][2].z, v[u][3].z);
            *(float4 *)(d + 3 * 128 + ((l ^ (swz + 3)) << 4)) = make_float4(v[u][0].w, v[u][1].w, v[u][2].w, v[u][3].w);
        }
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); /* the writes, to the copy engine */
        if (threadIdx.x == 0) /* the output tile that tile k + 1 writes has been read out (by store k + 1 - NY) */
            asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(NY - 2) : "memory");
        __syncthreads(); /* input tile s read, output tile yb written, output tile (k + 1) % NY free */
        if (threadIdx.x == 0) {
            store_tile(&tmy, out_s + yb * TILE_BYTES, row0, col0, R, policy);
            if (k + STAGES < mine) {
                int nrow0, ncol0;
                tile_origin((int)blockIdx.x + (k + STAGES) * P, R, C, &nrow0, &ncol0);
                load_tile(&tmx, in_s + s * TILE_BYTES, bar0 + 8 * s, nrow0, ncol0, C, policy);
            }
        }
    }
    if (threadIdx.x == 0) /* the output tiles stay allocated until the copy engine is done with them */
        asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}

/* Shapes TMA cannot describe (R or C not a multiple of 4): a 32 x 32 tile through padded shared
 * memory, bounds-checked. */
extern "C" __global__ void __launch_bounds__(256)
    transpose_plain(float *__restrict__ y, const float *__restrict__ x, int R, int C)
{
    __shared__ float tile[32][33];
    const int c0 = blockIdx.x * 32, r0 = blockIdx.y * 32, tx = threadIdx.x;
    for (int i = threadIdx.y; i < 32; i += 8)
        if (r0 + i < R && c0 + tx < C)
            tile[i][tx] = x[(size_t)(r0 + i) * C + c0 + tx];
    __syncthreads();
    for (int j = threadIdx.y; j < 32; j += 8)
        if (c0 + j < C && r0 + tx < R)
            y[(size_t)(c0 + j) * R + r0 + tx] = tile[tx][j];
}
