// heavy_host_check.cpp: host checks of the index maths and numerics of issue 31's wgmma candidates
// (tasks/L2/gemm_bias_gelu/wgmma.cu, tasks/L3/mlp_block/wgmma.cu, tasks/L2/int8_gemm/wgmma.cu,
// tasks/L3/moe_grouped_gemm/wgmma.cu), which no
// machine without a GPU can run. Each candidate's layout helpers are __host__ __device__ above its
// __CUDA_ARCH__ guard, so this file includes the candidate named by CANDIDATE (with its knobs as -D) and
// checks them; bench/heavy_host_check.sh builds and runs it for each candidate at several knob settings.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <vector>

#define __host__
#define __device__
#define __forceinline__ inline
#include CANDIDATE_PATH

static int failures = 0;
#define EXPECT(cond, ...)                                                                                             \
    do {                                                                                                              \
        if (!(cond)) {                                                                                                \
            if (failures++ < 10) {                                                                                    \
                fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                                  \
                fprintf(stderr, __VA_ARGS__);                                                                         \
                fprintf(stderr, "\n");                                                                                \
            }                                                                                                         \
        }                                                                                                             \
    } while (0)

#if defined(CHECK_EPILOGUE)
// The epilogues name accumulator 4j + 2h + e of a thread by acc_coord(t, 0) plus (8h, 8j + e): the same
// element acc_coord gives for that index, for every thread and index (so each element is stored once).
static void check_epilogue_map()
{
    std::vector<int> seen(64 * BN, 0);
    int r0, c0;
    for (int t = 0; t < 128; t++) {
        acc_coord(t, 0, &r0, &c0);
        for (int j = 0; j < BN / 8; j++)
            for (int h = 0; h < 2; h++)
                for (int e = 0; e < 2; e++) {
                    int r, c;
                    acc_coord(t, 4 * j + 2 * h + e, &r, &c);
                    EXPECT(r == r0 + 8 * h && c == c0 + 8 * j + e, "t %d j %d h %d e %d: (%d,%d) vs (%d,%d)", t, j, h,
                           e, r, c, r0 + 8 * h, c0 + 8 * j + e);
                    EXPECT(c0 % 2 == 0, "c0 odd");
                    seen[r * BN + c]++;
                }
    }
    for (int i = 0; i < 64 * BN; i++)
        EXPECT(seen[i] == 1, "element %d of the slab held %d times", i, seen[i]);
}
#endif

#if defined(CHECK_GELU)
static double gelu_exact(double z)
{
    const double u = sqrt(2.0 / M_PI) * (z + 0.044715 * z * z * z);
    return z / (1.0 + exp(-2.0 * u));
}

// The GELU_TANH = 0 form with exp2f and 1/x standing in for ex2.approx and rcp.approx (each within 2 ulp of
// these): its constants and its behaviour at both ends, against double over z in [-60, 60].
static void check_gelu_exp_form()
{
    double worst_rel = 0, worst_abs = 0;
    for (int i = -600000; i <= 600000; i++) {
        const float z = (float)i * 1e-4f;
        const float p = z * fmaf(-0.1029432395800235f, z * z, -2.302208198144325f);
        const float e = exp2f(p);
        const float y = z * (1.0f / (1.0f + e));
        const double ref = gelu_exact(z);
        const double err = fabs(y - ref);
        worst_abs = fmax(worst_abs, err);
        if (fabs(ref) > 1e-30)
            worst_rel = fmax(worst_rel, err / fabs(ref));
        EXPECT(std::isfinite(y), "z %g: y %g", z, y);
    }
    printf("gelu exp form: worst relative error %.3g, absolute %.3g over z in [-60, 60]\n", worst_rel, worst_abs);
    EXPECT(worst_rel < 1e-5, "relative error %.3g", worst_rel);
    for (float z : {100.0f, 1000.0f, 4096.0f, 65536.0f}) {
        const float p = z * fmaf(-0.1029432395800235f, z * z, -2.302208198144325f);
        const float y = z * (1.0f / (1.0f + exp2f(p)));
        EXPECT(y == z, "large z %g gives %g", z, y);
        const float pn = -z * fmaf(-0.1029432395800235f, z * z, -2.302208198144325f);
        const float yn = -z * (1.0f / (1.0f + exp2f(pn)));
        EXPECT(yn == 0.0f, "large negative z %g gives %g", -z, yn);
    }
}
#endif


#if defined(CHECK_INT8)
// The hardware's read of a K-major operand through a 128B-swizzled descriptor, as the PTX ISA describes it
// and hgemm's A operand was measured to follow: element (row, k-byte) of the operand at descriptor d is at
// start + (row / 8) * SBO + (row % 8) * 128 + kbyte, then address bits 4-6 are XORed with bits 7-9.
static unsigned hw_addr(unsigned long long d, int row, int kbyte)
{
    const unsigned start = (unsigned)(d & 0x3FFF) << 4, sbo = (unsigned)((d >> 32) & 0x3FFF) << 4;
    const unsigned lbo_ok = (unsigned)((d >> 16) & 0x3FFF);
    EXPECT(lbo_ok == 1, "LBO field %u, expected 1 (unused for swizzled K-major)", lbo_ok);
    EXPECT((d >> 62) == 1, "layout field %llu, expected 1 (128B swizzle)", d >> 62);
    const unsigned a = start + (row / 8) * sbo + (row % 8) * 128 + kbyte;
    return a ^ (((a >> 7) & 7) << 4);
}

// The whole of int8_gemm/wgmma.cu's data flow on the host at one shape: the transpose launch's blocks
// (transpose_tile), each output tile's k-stages as the loaders place them (line_chunk, swz128, padded_k), the
// MMA reading them back through the descriptors (a_desc0, a_desc_at, b_desc0, b_desc_at and hw_addr), and the
// epilogue's element map (acc_coord) and scale (pow2_neg), against the exact product.
static void emulate_int8(int M, int N, int K, int SA, int SB, unsigned seed)
{
    std::vector<signed char> A((size_t)M * K), B((size_t)K * N);
    for (auto &v : A)
        v = (signed char)((seed = seed * 1103515245u + 12345u) >> 16) % 128;
    for (auto &v : B)
        v = (signed char)((seed = seed * 1103515245u + 12345u) >> 16) % 128;
    const int KP = padded_k(K);
    EXPECT(KP % BK == 0 && KP >= K && KP - K < BK, "padded_k(%d) = %d", K, KP);
    std::vector<signed char> BT((size_t)N * KP, 0x55);
    std::vector<int> written((size_t)N * KP, 0);
    const int tblocks = (K + 127) / 128 * 2 * ((N + 63) / 64); /* the launch's grid expression */
    for (int b = 0; b < tblocks; b++) {
        int k0, n0;
        transpose_tile(b, KP, &k0, &n0);
        for (int n = 0; n < 64; n++)
            for (int k = 0; k < 64; k++)
                if (n0 + n < N) {
                    EXPECT(k0 + k < KP, "transpose writes k %d past KP %d", k0 + k, KP);
                    BT[(size_t)(n0 + n) * KP + k0 + k] = k0 + k < K ? B[(size_t)(k0 + k) * N + n0 + n] : 0;
                    written[(size_t)(n0 + n) * KP + k0 + k]++;
                }
    }
    for (size_t i = 0; i < written.size(); i++)
        EXPECT(written[i] == 1, "BT byte %zu written %d times", i, written[i]);

    const unsigned sa0 = 0, sb0 = STAGES * A_BYTES; /* both 1024-aligned, as in the kernel */
    std::vector<unsigned char> smem(sb0 + STAGES * B_BYTES);
    std::vector<int> filled(smem.size());
    std::vector<float> Y((size_t)M * N, NAN);
    const float scale = pow2_neg(SA + SB);
    EXPECT(scale == (float)ldexp(1.0, -(SA + SB)), "pow2_neg(%d)", SA + SB);
    for (int m0 = 0; m0 < M; m0 += BM)
        for (int n0 = 0; n0 < N; n0 += BN) {
            const int mv = std::min(BM, M - m0), nv = std::min(BN, N - n0);
            std::vector<long long> D((size_t)BM * BN, 0);
            for (int kt = 0; kt * BK < K; kt++) {
                const int s = kt % STAGES;
                std::fill(filled.begin(), filled.end(), 0);
                for (int lt = 0; lt < LT; lt++) {
                    for (int i = 0; i < A_CPT; i++) {
                        int r, kc;
                        line_chunk(lt, i, &r, &kc);
                        for (int b = 0; b < 16; b++) {
                            const int row = m0 + r, k = kt * BK + kc * 16 + b;
                            const unsigned at = sa0 + s * A_BYTES + swz128(r, kc) + b;
                            smem[at] = row < M && k < K ? (unsigned char)A[(size_t)row * K + k] : 0;
                            filled[at]++;
                        }
                    }
                    for (int i = 0; i < B_CPT; i++) {
                        int r, kc;
                        line_chunk(lt, i, &r, &kc);
                        for (int b = 0; b < 16; b++) {
                            const int n = n0 + r;
                            const unsigned at = sb0 + s * B_BYTES + swz128(r, kc) + b;
                            smem[at] = n < N ? (unsigned char)BT[(size_t)n * KP + kt * BK + kc * 16 + b] : 0;
                            filled[at]++;
                        }
                    }
                }
                for (unsigned at = sa0 + s * A_BYTES; at < sa0 + (s + 1) * A_BYTES; at++)
                    EXPECT(filled[at] == 1, "A stage byte %u filled %d times", at, filled[at]);
                for (unsigned at = sb0 + s * B_BYTES; at < sb0 + (s + 1) * B_BYTES; at++)
                    EXPECT(filled[at] == 1, "BT stage byte %u filled %d times", at, filled[at]);
                for (int wg = 0; wg < CONS; wg++) {
                    const unsigned long long da0 = a_desc0(sa0, wg * WGM), db0 = b_desc0(sb0);
                    for (int kk = 0; kk < BK / 32; kk++)
                        for (int i = 0; i < WGM; i++) {
                            const unsigned long long da = a_desc_at(da0, s, i, kk), db = b_desc_at(db0, s, kk);
                            for (int m = 0; m < 64; m++) {
                                const int tm = (wg * WGM + i) * 64 + m;
                                if (tm >= mv)
                                    continue;
                                for (int n = 0; n < nv; n++) {
                                    long long sum = 0;
                                    for (int k = 0; k < 32; k++)
                                        sum += (long long)(signed char)smem[hw_addr(da, m, k)] *
                                               (signed char)smem[hw_addr(db, n, k)];
                                    D[(size_t)tm * BN + n] += sum;
                                }
                            }
                        }
                }
            }
            /* the epilogue's map: thread t of warpgroup wg, slab i, accumulator 4j + 2h + e */
            for (int wg = 0; wg < CONS; wg++)
                for (int t = 0; t < 128; t++)
                    for (int i = 0; i < WGM; i++)
                        for (int r = 0; r < NACC; r++) {
                            int rr, cc;
                            acc_coord(t, r, &rr, &cc);
                            const int row = m0 + (wg * WGM + i) * 64 + rr, col = n0 + cc;
                            if (row < M && col < N)
                                Y[(size_t)row * N + col] =
                                    (float)D[(size_t)(row - m0) * BN + (col - n0)] * scale;
                        }
        }
    int bad = 0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            long long sum = 0;
            for (int k = 0; k < K; k++)
                sum += (long long)A[(size_t)m * K + k] * B[(size_t)k * N + n];
            const float want = (float)ldexp((double)(float)sum, -(SA + SB));
            if (!(Y[(size_t)m * N + n] == want) && bad++ < 3)
                EXPECT(0, "M %d N %d K %d: Y[%d][%d] = %g, want %g", M, N, K, m, n, Y[(size_t)m * N + n], want);
        }
    EXPECT(bad == 0, "M %d N %d K %d: %d wrong", M, N, K, bad);
}

static void check_int8()
{
    /* descriptors stay within the 14-bit start field for the largest stage ring */
    const unsigned top = STAGES * (A_BYTES + B_BYTES) + 1024;
    EXPECT(top < (1u << 18), "shared memory %u past the descriptor's reach", top);
    const int shapes[][5] = {{1, 1, 1, 0, 0},   {7, 13, 17, 7, 6},   {64, 64, 64, 3, 11}, {33, 65, 129, 7, 6},
                             {127, 96, 257, 0, 9}, {1, 300, 4099, 7, 6}, {3, 37, 1201, 7, 6}, {5, 7, 4099, 5, 8},
                             {300, 3, 2, 1, 2},  {3, 700, 2, 2, 1},  {2, 3, 1000, 7, 6},  {129, 257, 130, 50, 50}};
    for (auto &sh : shapes)
        emulate_int8(sh[0], sh[1], sh[2], sh[3], sh[4], 7u + sh[0] * 31u + sh[2]);
}
#endif

#if defined(CHECK_MOE)
// moe_grouped_gemm/wgmma.cu's launch plan on the host at one shape: the routing launches as written (the
// atomics' order shuffled), every block of moe_gemm's grid through moe_tile and moe_expert_of, its loaders'
// gathered rows (a_chunk and the permutation) and its epilogue's scattered rows (acc_coord), each output
// element computed from the rows and expert the kernel would use, against y[t] = x[t] W[expert[t]] in double.
static void emulate_moe(int T, int Hd, int F, int E, int lo, int hi, unsigned seed)
{
    auto rnd = [&seed]() { return (seed = seed * 1103515245u + 12345u) >> 8; };
    std::vector<int> expert(T);
    for (auto &e : expert)
        e = lo + (int)(rnd() % (unsigned)(hi - lo + 1));
    std::vector<double> x((size_t)T * Hd), W((size_t)E * Hd * F > 50000000 ? 0 : (size_t)E * Hd * F);
    for (auto &v : x)
        v = (int)(rnd() % 7) - 3;
    const bool dense = !W.empty(); /* E = 65537: W is generated on the fly */
    auto w_at = [&](int e, int k, int n) {
        return dense ? W[((size_t)e * Hd + k) * F + n] : (double)((e * 131 + k * 17 + n * 7) % 11 - 5);
    };
    for (size_t i = 0; i < W.size(); i++)
        W[i] = (int)(rnd() % 9) - 4;
    /* moe_zero, then moe_count with the threads' atomics in a shuffled order */
    std::vector<int> counts(E, 0), rank(T, -1), order(T);
    for (int t = 0; t < T; t++)
        order[t] = t;
    for (int t = T - 1; t > 0; t--)
        std::swap(order[t], order[rnd() % (unsigned)(t + 1)]);
    for (int t : order)
        rank[t] = counts[expert[t]]++;
    /* moe_scan as written: 1024 threads, each with ceil(E / 1024) consecutive experts */
    std::vector<int> offs(E + 1, -7), tstart(E + 1, -7), s_rows(1024), s_tiles(1024), mine_r(1024), mine_t(1024);
    const int per = (E + 1023) / 1024;
    for (int tid = 0; tid < 1024; tid++) {
        const int l = std::min(tid * per, E), h = std::min(l + per, E);
        int rows = 0, tiles = 0;
        for (int e = l; e < h; e++) {
            rows += counts[e];
            tiles += (counts[e] + BM - 1) / BM;
        }
        s_rows[tid] = mine_r[tid] = rows;
        s_tiles[tid] = mine_t[tid] = tiles;
    }
    for (int off = 1; off < 1024; off *= 2) {
        std::vector<int> r2 = s_rows, t2 = s_tiles;
        for (int tid = off; tid < 1024; tid++) {
            r2[tid] += s_rows[tid - off];
            t2[tid] += s_tiles[tid - off];
        }
        s_rows = r2;
        s_tiles = t2;
    }
    for (int tid = 0; tid < 1024; tid++) {
        const int l = std::min(tid * per, E), h = std::min(l + per, E);
        int rows = s_rows[tid] - mine_r[tid], tiles = s_tiles[tid] - mine_t[tid];
        for (int e = l; e < h; e++) {
            offs[e] = rows;
            tstart[e] = tiles;
            rows += counts[e];
            tiles += (counts[e] + BM - 1) / BM;
        }
    }
    offs[E] = s_rows[1023];
    tstart[E] = s_tiles[1023];
    EXPECT(offs[E] == T, "offs[E] = %d, T = %d", offs[E], T);
    for (int e = 0; e < E; e++)
        EXPECT(offs[e + 1] - offs[e] == counts[e] && tstart[e + 1] - tstart[e] == (counts[e] + BM - 1) / BM,
               "expert %d: offsets %d..%d, tiles %d..%d, count %d", e, offs[e], offs[e + 1], tstart[e], tstart[e + 1],
               counts[e]);
    /* moe_place */
    std::vector<int> perm(T, -1);
    for (int t = 0; t < T; t++)
        perm[offs[expert[t]] + rank[t]] = t;
    for (int p = 0; p < T; p++)
        EXPECT(perm[p] >= 0, "perm[%d] unset", p);
    /* moe_gemm: every block of the launch's grid */
    const int grid = ((T + BM - 1) / BM + std::min(E, T)) * ((F + BN - 1) / BN);
    const int tiles = tstart[E] * ((F + BN - 1) / BN);
    EXPECT(tiles <= grid, "grid %d below the %d tiles", grid, tiles);
    std::vector<int> writes((size_t)T * F, 0);
    int bad = 0;
    for (int pid = 0; pid < grid; pid++) {
        int mt, nt;
        if (!moe_tile(pid, tstart[E], (F + BN - 1) / BN, &mt, &nt))
            continue;
        const int e = moe_expert_of(tstart.data(), E, mt);
        EXPECT(tstart[e] <= mt && mt < tstart[e + 1], "tile row %d given expert %d (tiles %d..%d)", mt, e, tstart[e],
               tstart[e + 1]);
        const int p0 = offs[e] + (mt - tstart[e]) * BM, p_end = offs[e + 1], n0 = nt * BN;
        /* the loaders' gathered rows: tile row r holds x row xrow[r] (-1: zeros) */
        std::vector<int> xrow(BM, -2);
        for (int lt = 0; lt < LT; lt++)
            for (int i = 0; i < A_CPT; i++) {
                int r, kc;
                a_chunk(lt, i, &r, &kc);
                const int p = p0 + (lt / 8) + i * A_RSTEP; /* loader_init's p for chunk i */
                EXPECT(r == p - p0, "loader %d chunk %d: tile row %d, position %d", lt, i, r, p - p0);
                xrow[r] = p < p_end ? perm[p] : -1;
            }
        for (int r = 0; r < BM; r++)
            EXPECT(xrow[r] != -2, "tile row %d not loaded", r);
        /* the epilogue's scattered rows */
        for (int wg = 0; wg < CONS; wg++)
            for (int t = 0; t < 128; t++)
                for (int i = 0; i < WGM; i++)
                    for (int r = 0; r < NACC; r++) {
                        int rr, cc;
                        acc_coord(t, r, &rr, &cc);
                        const int tile_row = (wg * WGM + i) * 64 + rr, p = p0 + tile_row, col = n0 + cc;
                        if (p >= p_end || col >= F)
                            continue;
                        const int row = perm[p];
                        EXPECT(xrow[tile_row] == row, "tile row %d loaded x row %d, stored to y row %d", tile_row,
                               xrow[tile_row], row);
                        writes[(size_t)row * F + col]++;
                        double got = 0, want = 0;
                        for (int k = 0; k < Hd; k++) {
                            got += x[(size_t)xrow[tile_row] * Hd + k] * w_at(e, k, col);
                            want += x[(size_t)row * Hd + k] * w_at(expert[row], k, col);
                        }
                        if (got != want && bad++ < 3)
                            EXPECT(0, "y[%d][%d]: %g, want %g", row, col, got, want);
                    }
    }
    for (size_t i = 0; i < writes.size(); i++)
        if (writes[i] != 1 && bad++ < 3)
            EXPECT(0, "T %d F %d E %d: y element %zu written %d times", T, F, E, i, writes[i]);
    EXPECT(bad == 0, "T %d Hd %d F %d E %d: %d wrong", T, Hd, F, E, bad);
}

static void check_moe()
{
    /* the task's check shapes (with their routing draws), the bench routing at small Hd and F, and more */
    const int shapes[][6] = {{1, 1, 1, 1, 0, 0},     {7, 33, 65, 3, 0, 2},    {16, 64, 128, 8, 0, 7},
                             {37, 96, 97, 5, 0, 4},  {64, 257, 64, 8, 0, 7},  {9, 64, 96, 8, 7, 7},
                             {3, 1000, 31, 2, 0, 1}, {65537, 2, 3, 2, 0, 1},  {2, 655, 3, 2, 0, 1},
                             {2, 2, 65537, 2, 0, 1}, {3, 2, 2, 65537, 0, 65536}, {4096, 4, 520, 8, 0, 7},
                             {1000, 3, 9, 300, 0, 299}, {5000, 2, 2, 3000, 0, 2999}};
    for (auto &sh : shapes)
        emulate_moe(sh[0], sh[1], sh[2], sh[3], sh[4], sh[5], 11u + sh[0] + sh[3] * 7u);
}
#endif

int main()
{
#if defined(CHECK_EPILOGUE)
    check_epilogue_map();
#endif
#if defined(CHECK_GELU)
    check_gelu_exp_form();
#endif
#if defined(CHECK_INT8)
    check_int8();
#endif
#if defined(CHECK_MOE)
    check_moe();
#endif
    printf("%s: %s\n", CANDIDATE_PATH, failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
