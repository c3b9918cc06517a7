// A tunable tiled bf16 GEMM, C = A*B (row-major, raw ushort bf16 storage, fp32 accumulation, one
// round-to-nearest-even to bf16 at the end). A work-group computes a TSM x TSN tile of C; each of
// its (TSM/WPTM) x (TSN/WPTN) work-items keeps WPTM x WPTN accumulators in registers, at rows
// ty + i*(TSM/WPTM) and columns tx + j*(TSN/WPTN) (strided, so that neighbouring work-items read
// neighbouring local words and store neighbouring columns). K advances TSK at a time: the
// work-group stages the A panel (transposed, k-major) and the B panel in local memory as fp32,
// converted once on load, zero outside the matrix, so every size (1, primes, tails) takes the
// same path; the inner loop is then WPTM + WPTN local reads per WPTM*WPTN multiply-adds.
// @temper task hgemm
// @temper param TSM 64 32 16 128
// @temper param TSN 64 32 16 128
// @temper param TSK 16 8 32
// @temper param WPTM 4 2 1 8
// @temper param WPTN 4 2 1 8
// @temper require TSM % WPTM == 0 && TSN % WPTN == 0
// @temper require (TSM / WPTM) * (TSN / WPTN) >= 16 && (TSM / WPTM) * (TSN / WPTN) <= 256
// @temper require (TSM + TSN) * TSK * 4 <= 32768
// @temper launch hgemm_tiled grid(ceil_div(N, TSN), ceil_div(M, TSM)) block(TSN / WPTN, TSM / WPTM) args(C, A, B, M, N, K)

#define RTSM (TSM / WPTM) /* work-items along M */
#define RTSN (TSN / WPTN) /* work-items along N */
#define NT (RTSM * RTSN)  /* work-items per work-group */

static float bf16_to_f32(ushort b)
{
    return as_float((uint)b << 16);
}

static ushort f32_to_bf16(float f)
{
    uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (ushort)((u >> 16) | 0x40u); /* NaN stays a quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);       /* round to nearest even */
    return (ushort)(u >> 16);
}

__kernel __attribute__((reqd_work_group_size(RTSN, RTSM, 1))) void
hgemm_tiled(__global ushort *C, __global const ushort *A, __global const ushort *B, int M, int N, int K)
{
    __local float As[TSK][TSM]; /* A panel, k-major: As[k][m] */
    __local float Bs[TSK][TSN]; /* B panel: Bs[k][n] */
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int lid = ty * RTSN + tx;
    const int m0 = get_group_id(1) * TSM, n0 = get_group_id(0) * TSN;

    float acc[WPTM][WPTN];
    for (int i = 0; i < WPTM; i++)
        for (int j = 0; j < WPTN; j++)
            acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += TSK) {
        /* A panel: consecutive work-items read consecutive k of one row */
        for (int e = lid; e < TSM * TSK; e += NT) {
            int r = e / TSK, kk = e % TSK;
            int gr = m0 + r, gk = k0 + kk;
            As[kk][r] = (gr < M && gk < K) ? bf16_to_f32(A[(size_t)gr * K + gk]) : 0.0f;
        }
        /* B panel: consecutive work-items read consecutive columns of one row */
        for (int e = lid; e < TSK * TSN; e += NT) {
            int kk = e / TSN, c = e % TSN;
            int gk = k0 + kk, gc = n0 + c;
            Bs[kk][c] = (gk < K && gc < N) ? bf16_to_f32(B[(size_t)gk * N + gc]) : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int kk = 0; kk < TSK; kk++) {
            float a[WPTM], b[WPTN];
            for (int i = 0; i < WPTM; i++)
                a[i] = As[kk][ty + i * RTSM];
            for (int j = 0; j < WPTN; j++)
                b[j] = Bs[kk][tx + j * RTSN];
            for (int i = 0; i < WPTM; i++)
                for (int j = 0; j < WPTN; j++)
                    acc[i][j] += a[i] * b[j];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    for (int i = 0; i < WPTM; i++) {
        int row = m0 + ty + i * RTSM;
        if (row >= M)
            continue;
        for (int j = 0; j < WPTN; j++) {
            int col = n0 + tx + j * RTSN;
            if (col < N)
                C[(size_t)row * N + col] = f32_to_bf16(acc[i][j]);
        }
    }
}
