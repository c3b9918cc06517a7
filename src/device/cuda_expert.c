/* cuda_expert.c: vendor-library experts of the CUDA backend: the routines expert() queues through
 * cuBLAS and cuBLASLt (cuda_blas.c loads them), each run in the fastest configuration the library
 * offers for its shape and operands, chosen by timing at the first call and kept; or, with
 * TEMPER_EXPERT_PICK, in the configuration PyTorch would run (cuda_blas.h, enum cuda_expert_pick). */
#include "cuda_blas.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The GEMM plans chosen so far (cuda_ctx.lt_cache), kept for the context's life: a timed loop on a
 * shape queues only the matmul, and the choice is made once, at the shape's first (warm-up) call. */
#define CUDA_LT_PLANS 16     /* plans kept; the least recently used goes when a new one needs room */
#define CUDA_LT_CANDIDATES 8 /* heuristic results asked for and timed, beside the plain cuBLAS call */
#define CUDA_LT_ROUNDS 3     /* timed runs of each candidate at selection (the fastest counts) */

/* One routine at one shape and set of operand alignments, and the configuration chosen for it. */
struct cuda_lt_plan {
    int valid;                      /* 1 when the members below describe a plan */
    int kind;                       /* the routine's enum cuda_expert_kind */
    int m, n, k;                    /* the row-major problem (a GEMV: m = N, n = 1, k = K) */
    unsigned align[4];              /* the alignments (bytes, at most 256) of the buffers it was chosen for */
    int use_cublas;                 /* 1: the plain cuBLAS call won the selection, algo is unused */
    cublasLtMatmulDesc_t desc;      /* compute type, transposes, epilogue */
    cublasLtMatrixLayout_t a, b, d; /* column-major layouts of cuBLASLt's A, B and C = D */
    cublasLtMatmulAlgo_t algo;      /* the fastest heuristic result, when use_cublas is 0 */
    float best_ms;                  /* the winner's fastest time at selection */
    size_t ws_bytes;                /* cuBLASLt's workspace offered to the heuristic and each matmul */
    unsigned long long used;        /* the cache's clock at the last use (least recently used goes) */
};

/* Every plan of a context. */
struct cuda_lt_cache {
    struct cuda_lt_plan plans[CUDA_LT_PLANS]; /* valid ones anywhere in the array */
    unsigned long long clock;                 /* counts uses */
};

/* Frees a plan's descriptors (cuBLASLt is loaded when a plan exists). */
static void cuda_lt_plan_free(struct cuda_lt_plan *p)
{
    if (p->desc)
        cuda_lt.cublasLtMatmulDescDestroy(p->desc);
    if (p->a)
        cuda_lt.cublasLtMatrixLayoutDestroy(p->a);
    if (p->b)
        cuda_lt.cublasLtMatrixLayoutDestroy(p->b);
    if (p->d)
        cuda_lt.cublasLtMatrixLayoutDestroy(p->d);
    memset(p, 0, sizeof *p);
}

/* Frees c's cuBLAS and cuBLASLt handles, their workspaces and the plans; c's context is current. */
void cuda_expert_free(struct cuda_ctx *c)
{
    if (c->cublas)
        cuda_cb.cublasDestroy(c->cublas); /* waits for its work, before its workspace goes */
    if (c->cublas_workspace)
        cuda_cu.cuMemFree(c->cublas_workspace);
    if (c->cublaslt || c->lt_cache)
        cuda_cu.cuCtxSynchronize(); /* cublasLtDestroy does not wait for queued matmuls using the workspace */
    if (c->lt_cache) {
        for (int i = 0; i < CUDA_LT_PLANS; i++)
            cuda_lt_plan_free(&c->lt_cache->plans[i]);
        free(c->lt_cache);
        c->lt_cache = NULL;
    }
    if (c->cublaslt)
        cuda_lt.cublasLtDestroy(c->cublaslt);
    if (c->cublaslt_workspace)
        cuda_cu.cuMemFree(c->cublaslt_workspace);
}

/* The routines, by the plain call each makes; each runs that call or one of cuBLASLt's algorithms
 * for the same product, whichever timed fastest (cuda_lt_choose), except the GELU_BIAS one, which
 * has only cuBLASLt's. */
enum cuda_expert_kind {
    CUDA_EXPERT_SGEMM,          /* cublasSgemm_v2, fp32 */
    CUDA_EXPERT_GEMM_BF16,      /* cublasGemmEx, bf16 in and out, fp32 compute */
    CUDA_EXPERT_GEMM_TF32,      /* cublasGemmEx, fp32 in and out, TF32 tensor cores */
    CUDA_EXPERT_GEMV_BF16,      /* cublasGemmEx with n = 1, bf16 in and out, fp32 compute */
    CUDA_EXPERT_BIAS_GELU_BF16, /* cublasLtMatmul with the GELU_BIAS epilogue, bf16, fp32 compute */
};

static const char *const cuda_gemm_bufs[] = {"C", "A", "B"};
static const char *const cuda_gemv_bufs[] = {"y", "W", "x"};
static const char *const cuda_bias_gelu_bufs[] = {"Y", "X", "W", "bias"};
static const char *const cuda_mnk[] = {"M", "N", "K"};
static const char *const cuda_cube[] = {"n"};
static const char *const cuda_nk[] = {"N", "K"};

/* One routine expert() knows. */
struct cuda_expert_routine {
    const char *name;
    enum cuda_expert_kind kind;
    int nbufs;                      /* outputs, then inputs */
    const char *const *buf_names;   /* nbufs of them */
    int nscalars;
    const char *const *scalar_names; /* nscalars of them */
    size_t elem_size;               /* bytes per element of every buffer */
};

static const struct cuda_expert_routine cuda_expert_routines[] = {
    {"cublas_sgemm", CUDA_EXPERT_SGEMM, 3, cuda_gemm_bufs, 3, cuda_mnk, 4},
    {"cublas_hgemm_bf16", CUDA_EXPERT_GEMM_BF16, 3, cuda_gemm_bufs, 3, cuda_mnk, 2},
    {"cublas_sgemm_tf32", CUDA_EXPERT_GEMM_TF32, 3, cuda_gemm_bufs, 3, cuda_mnk, 4},
    {"cublas_bf16_probe", CUDA_EXPERT_GEMM_BF16, 3, cuda_gemm_bufs, 1, cuda_cube, 2},
    {"cublas_gemv_bf16", CUDA_EXPERT_GEMV_BF16, 3, cuda_gemv_bufs, 2, cuda_nk, 2},
    {"cublaslt_gemm_bias_gelu_bf16", CUDA_EXPERT_BIAS_GELU_BF16, 4, cuda_bias_gelu_bufs, 3, cuda_mnk, 2},
    {NULL, 0, 0, NULL, 0, NULL, 0},
};

/* The alignment of a device address in bytes, as cuBLASLt's preferences count it (at most 256). */
static unsigned cuda_lt_alignment(CUdeviceptr p)
{
    unsigned long long low = p & (~p + 1); /* the lowest set bit; 0 for a null pointer */
    return low == 0 || low > 256 ? 256u : (unsigned)low;
}

/* One call of a GEMM routine: what it computes and its buffers' device addresses. */
struct cuda_gemm_call {
    const struct cuda_expert_routine *rt; /* the routine */
    int m, n, k;                          /* the row-major problem (a GEMV: m = N, n = 1, k = K) */
    CUdeviceptr out, in1, in2, bias;      /* bufs[0..3] (C, A, B; y, W, x; Y, X, W, bias); bias 0 without */
};

/* Queues the plain cuBLAS call for g (not for the GELU_BIAS routine), as PyTorch's
 * at::cuda::blas::gemm makes it: row-major C = A * B is the column-major C^T = B^T * A^T, so no
 * transposes (cublasSgemm for fp32, cublasGemmEx for the rest). *what names the call. */
static cublasStatus_t cuda_gemm_cublas(const struct cuda_ctx *c, const struct cuda_gemm_call *g, const char **what)
{
    const float one = 1.0f, zero = 0.0f;
    const int ldc = g->n, lda = g->k ? g->k : 1, ldb = g->n; /* leading dimensions of the row-major arrays */
    const void *a = (const void *)(uintptr_t)g->in1, *b = (const void *)(uintptr_t)g->in2;
    void *cc = (void *)(uintptr_t)g->out;
    switch (g->rt->kind) {
    case CUDA_EXPERT_SGEMM:
        *what = "cublasSgemm_v2";
        return cuda_cb.cublasSgemm(c->cublas, CUBLAS_OP_N, CUBLAS_OP_N, g->n, g->m, g->k, &one, b, ldb, a, lda, &zero,
                                   cc, ldc);
    case CUDA_EXPERT_GEMM_BF16:
        *what = "cublasGemmEx (bf16, fp32 compute)";
        return cuda_cb.cublasGemmEx(c->cublas, CUBLAS_OP_N, CUBLAS_OP_N, g->n, g->m, g->k, &one, b, CUDA_R_16BF, ldb,
                                    a, CUDA_R_16BF, lda, &zero, cc, CUDA_R_16BF, ldc, CUBLAS_COMPUTE_32F,
                                    CUBLAS_GEMM_DEFAULT);
    case CUDA_EXPERT_GEMV_BF16:
        /* W row-major [N,K] is column-major K x N with ld K; y (N x 1) = W^T x (K x 1) */
        *what = "cublasGemmEx (bf16 GEMV, fp32 compute)";
        return cuda_cb.cublasGemmEx(c->cublas, CUBLAS_OP_T, CUBLAS_OP_N, g->m, 1, g->k, &one, a, CUDA_R_16BF, lda, b,
                                    CUDA_R_16BF, lda, &zero, cc, CUDA_R_16BF, g->m, CUBLAS_COMPUTE_32F,
                                    CUBLAS_GEMM_DEFAULT);
    case CUDA_EXPERT_GEMM_TF32:
        *what = "cublasGemmEx (fp32, TF32 compute)";
        return cuda_cb.cublasGemmEx(c->cublas, CUBLAS_OP_N, CUBLAS_OP_N, g->n, g->m, g->k, &one, b, CUDA_R_32F, ldb,
                                    a, CUDA_R_32F, lda, &zero, cc, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F_FAST_TF32,
                                    CUBLAS_GEMM_DEFAULT);
    default:
        *what = "cuBLAS (no plain call for this routine)";
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
}

/* Queues g through cuBLASLt with plan p's descriptors and the algorithm algo. */
static cublasStatus_t cuda_gemm_lt(const struct cuda_ctx *c, const struct cuda_lt_plan *p,
                                   const cublasLtMatmulAlgo_t *algo, const struct cuda_gemm_call *g, const char **what)
{
    const float one = 1.0f, zero = 0.0f;
    /* cuBLASLt's A and B: the row-major B and A of a GEMM (W and X with the epilogue), W and x of a GEMV */
    const int gemv = g->rt->kind == CUDA_EXPERT_GEMV_BF16;
    const void *lt_a = (const void *)(uintptr_t)(gemv ? g->in1 : g->in2);
    const void *lt_b = (const void *)(uintptr_t)(gemv ? g->in2 : g->in1);
    if (g->rt->kind == CUDA_EXPERT_BIAS_GELU_BF16) {
        const void *bias_ptr = (const void *)(uintptr_t)g->bias;
        *what = "cublasLtMatmulDescSetAttribute (bias pointer)";
        cublasStatus_t s = cuda_lt.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                                  &bias_ptr, sizeof bias_ptr);
        if (s != CUBLAS_STATUS_SUCCESS)
            return s;
    }
    *what = "cublasLtMatmul";
    return cuda_lt.cublasLtMatmul(c->cublaslt, p->desc, &one, lt_a, p->a, lt_b, p->b, &zero,
                                  (const void *)(uintptr_t)g->out, p->d, (void *)(uintptr_t)g->out, p->d, algo,
                                  p->ws_bytes ? (void *)(uintptr_t)c->cublaslt_workspace : NULL, p->ws_bytes, NULL);
}

/* Queues candidate i of plan p's selection: 0 the plain cuBLAS call, i >= 1 heuristic result i-1. */
static cublasStatus_t cuda_gemm_candidate(const struct cuda_ctx *c, const struct cuda_lt_plan *p,
                                          const cublasLtMatmulHeuristicResult_t *res, int i,
                                          const struct cuda_gemm_call *g, const char **what)
{
    return i == 0 ? cuda_gemm_cublas(c, g, what) : cuda_gemm_lt(c, p, &res[i - 1].algo, g, what);
}

/* Times every candidate (the plain cuBLAS call unless first is 1, then the heuristic's nres
 * results): each runs once untimed (the libraries load kernels lazily), then CUDA_LT_ROUNDS
 * times in turn, timed with events on the legacy default stream; the fastest run of each counts,
 * and the fastest candidate is kept in p. Its output is left in g's output by one more run. With
 * TEMPER_EXPERT_TRACE set, every candidate's time goes to standard error, after pick's name and
 * the workspace. */
static int cuda_lt_choose(struct cuda_ctx *c, struct cuda_lt_plan *p, const cublasLtMatmulHeuristicResult_t *res,
                          int nres, int first, enum cuda_expert_pick pick, const struct cuda_gemm_call *g, char *msg,
                          size_t msg_size)
{
    const int count = nres + 1;
    float best[CUDA_LT_CANDIDATES + 1];
    cublasStatus_t status[CUDA_LT_CANDIDATES + 1];
    const char *what = "cublasLtMatmul";
    CUevent ev[2] = {NULL, NULL};
    CUresult r = cuda_cu.cuEventCreate(&ev[0], 0);
    if (r == CUDA_SUCCESS)
        r = cuda_cu.cuEventCreate(&ev[1], 0);
    for (int i = 0; i < count; i++) {
        best[i] = -1.0f;
        status[i] = CUBLAS_STATUS_NOT_SUPPORTED;
        if (r == CUDA_SUCCESS && i >= first)
            status[i] = cuda_gemm_candidate(c, p, res, i, g, &what);
    }
    if (r == CUDA_SUCCESS)
        r = cuda_cu.cuCtxSynchronize();
    for (int round = 0; round < CUDA_LT_ROUNDS && r == CUDA_SUCCESS; round++)
        for (int i = first; i < count && r == CUDA_SUCCESS; i++) {
            if (status[i] != CUBLAS_STATUS_SUCCESS)
                continue;
            float ms = 0.0f;
            r = cuda_cu.cuEventRecord(ev[0], NULL);
            if (r == CUDA_SUCCESS && (status[i] = cuda_gemm_candidate(c, p, res, i, g, &what)) != CUBLAS_STATUS_SUCCESS)
                continue;
            if (r == CUDA_SUCCESS)
                r = cuda_cu.cuEventRecord(ev[1], NULL);
            if (r == CUDA_SUCCESS)
                r = cuda_cu.cuEventSynchronize(ev[1]);
            if (r == CUDA_SUCCESS)
                r = cuda_cu.cuEventElapsedTime(&ms, ev[0], ev[1]);
            if (r == CUDA_SUCCESS && (best[i] < 0.0f || ms < best[i]))
                best[i] = ms;
        }
    for (int i = 0; i < 2; i++)
        if (ev[i])
            cuda_cu.cuEventDestroy(ev[i]);
    if (r != CUDA_SUCCESS)
        return cuda_fail(c, r, TEMPER_EDEVICE, msg, msg_size, "timing the expert's candidate configurations");
    int win = -1;
    for (int i = first; i < count; i++)
        if (status[i] == CUBLAS_STATUS_SUCCESS && best[i] >= 0.0f && (win < 0 || best[i] < best[win]))
            win = i;
    if (getenv("TEMPER_EXPERT_TRACE")) { /* the library's file and version, then each candidate */
        Dl_info where;
        void *sym;
        memcpy(&sym, &cuda_lt.cublasLtMatmul, sizeof sym);
        const char *file = dladdr(sym, &where) && where.dli_fname ? where.dli_fname : NULL;
        void *lib = file ? dlopen(file, RTLD_LAZY | RTLD_NOLOAD) : NULL; /* the loaded one, counted again */
        void *v = lib ? dlsym(lib, "cublasLtGetVersion") : NULL;
        size_t (*version)(void) = NULL;
        memcpy(&version, &v, sizeof v);
        fprintf(stderr, "temper expert %s M=%d N=%d K=%d (%s, version %zu; pick %s, cuBLASLt workspace %zu KiB):",
                g->rt->name, g->m, g->n, g->k, file ? file : "?", version ? version() : (size_t)0,
                cuda_expert_pick_name(pick), p->ws_bytes / 1024);
        if (lib)
            dlclose(lib);
        for (int i = first; i < count; i++)
            fprintf(stderr, " %s%d %.4f ms%s", i ? "lt#" : "cublas", i ? i - 1 : 0, best[i],
                    status[i] == CUBLAS_STATUS_SUCCESS ? "" : " (failed)");
        fprintf(stderr, "; kept %s%d\n", win > 0 ? "lt#" : "cublas", win > 0 ? win - 1 : 0);
    }
    if (win < 0) {
        char where[192];
        snprintf(where, sizeof where, "%s: %s M=%d N=%d K=%d (no candidate configuration ran)", g->rt->name, what, g->m,
                 g->n, g->k);
        return cuda_cublaslt_fail(status[first], msg, msg_size, where);
    }
    p->use_cublas = win == 0;
    if (win > 0)
        p->algo = res[win - 1].algo;
    p->best_ms = best[win];
    cublasStatus_t s = cuda_gemm_candidate(c, p, res, win, g, &what); /* the call's own output */
    if (s != CUBLAS_STATUS_SUCCESS) {
        char where[192];
        snprintf(where, sizeof where, "%s: %s M=%d N=%d K=%d", g->rt->name, what, g->m, g->n, g->k);
        return cuda_cublaslt_fail(s, msg, msg_size, where);
    }
    return 0;
}

/* Makes p's matmul descriptor (compute type, transposes, epilogue) and its layouts of A, B and D
 * for g (cuda_lt_plan_make); *what names the call that failed. */
static cublasStatus_t cuda_lt_layouts_make(struct cuda_lt_plan *p, const struct cuda_gemm_call *g, const char **what)
{
    const int kind = g->rt->kind, m = g->m, n = g->n, k = g->k;
    const int type = kind == CUDA_EXPERT_SGEMM || kind == CUDA_EXPERT_GEMM_TF32 ? CUDA_R_32F : CUDA_R_16BF;
    const int compute = kind == CUDA_EXPERT_GEMM_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    *what = "cublasLtMatmulDescCreate";
    cublasStatus_t s = cuda_lt.cublasLtMatmulDescCreate(&p->desc, compute, CUDA_R_32F);
    if (kind == CUDA_EXPERT_BIAS_GELU_BF16) {
        const uint32_t epilogue = CUBLASLT_EPILOGUE_GELU_BIAS;
        const int32_t bias_type = CUDA_R_16BF;
        const void *bias_ptr = (const void *)(uintptr_t)g->bias;
        if (s == CUBLAS_STATUS_SUCCESS) {
            *what = "cublasLtMatmulDescSetAttribute (epilogue GELU_BIAS)";
            s = cuda_lt.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                                       sizeof epilogue);
        }
        if (s == CUBLAS_STATUS_SUCCESS) {
            *what = "cublasLtMatmulDescSetAttribute (bias data type bf16)";
            s = cuda_lt.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                                       sizeof bias_type);
        }
        if (s == CUBLAS_STATUS_SUCCESS) { /* the heuristic reads the bias pointer's alignment */
            *what = "cublasLtMatmulDescSetAttribute (bias pointer)";
            s = cuda_lt.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr,
                                                       sizeof bias_ptr);
        }
    }
    if (kind == CUDA_EXPERT_GEMV_BF16 && s == CUBLAS_STATUS_SUCCESS) {
        const int32_t op_t = CUBLAS_OP_T;
        *what = "cublasLtMatmulDescSetAttribute (TRANSA)";
        s = cuda_lt.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof op_t);
    }
    if (s == CUBLAS_STATUS_SUCCESS) {
        *what = "cublasLtMatrixLayoutCreate";
        if (kind == CUDA_EXPERT_GEMV_BF16) /* W row-major [N,K]: column-major K x N, transposed */
            s = cuda_lt.cublasLtMatrixLayoutCreate(&p->a, type, (uint64_t)k, (uint64_t)m, k);
        else
            s = cuda_lt.cublasLtMatrixLayoutCreate(&p->a, type, (uint64_t)n, (uint64_t)k, n);
    }
    /* B: the row-major A read as k x m (x as k x 1 for a GEMV); D: C^T as n x m (y as m x 1) */
    const int gemv = kind == CUDA_EXPERT_GEMV_BF16;
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cuda_lt.cublasLtMatrixLayoutCreate(&p->b, type, (uint64_t)k, gemv ? 1u : (uint64_t)m, k);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cuda_lt.cublasLtMatrixLayoutCreate(&p->d, type, gemv ? (uint64_t)m : (uint64_t)n, gemv ? 1u : (uint64_t)m,
                                               gemv ? m : n);
    return s;
}

/* Asks cuBLASLt's heuristic for up to wanted configurations of p (s: the status so far), for its
 * workspace and the operands' alignments (align, in buffer order), into res and *found
 * (cuda_lt_plan_make); *what names the call that failed. */
static cublasStatus_t cuda_lt_heuristic(struct cuda_ctx *c, struct cuda_lt_plan *p, cublasStatus_t s, int gemv,
                                        const unsigned align[4], int wanted, cublasLtMatmulHeuristicResult_t *res,
                                        int *found, const char **what)
{
    cublasLtMatmulPreference_t pref = NULL;
    if (s == CUBLAS_STATUS_SUCCESS) {
        *what = "cublasLtMatmulPreferenceCreate";
        s = cuda_lt.cublasLtMatmulPreferenceCreate(&pref);
    }
    const uint64_t ws_bytes = p->ws_bytes;
    if (s == CUBLAS_STATUS_SUCCESS) {
        *what = "cublasLtMatmulPreferenceSetAttribute";
        s = cuda_lt.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                                         sizeof ws_bytes);
    }
    /* align[] is in buffer order (out, in1, in2); cuBLASLt's A and B are swapped for a GEMM */
    const int align_attr[4] = {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                               CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    const uint32_t align_val[4] = {gemv ? align[1] : align[2], gemv ? align[2] : align[1], align[0], align[0]};
    for (int i = 0; i < 4 && s == CUBLAS_STATUS_SUCCESS; i++)
        s = cuda_lt.cublasLtMatmulPreferenceSetAttribute(pref, align_attr[i], &align_val[i], sizeof align_val[i]);
    if (s == CUBLAS_STATUS_SUCCESS) {
        *what = "cublasLtMatmulAlgoGetHeuristic";
        s = cuda_lt.cublasLtMatmulAlgoGetHeuristic(c->cublaslt, p->desc, p->a, p->b, p->d, p->d, pref,
                                                   wanted, res, found);
    }
    if (pref)
        cuda_lt.cublasLtMatmulPreferenceDestroy(pref);
    return s;
}

/* Makes a plan for g in p: the cuBLASLt descriptors for the column-major form of the row-major
 * problem, as PyTorch's at::cuda::blas passes it (cuBLASLt's A is the row-major B, its B the
 * row-major A, D = C^T, no transposes; a GEMV reads W [N,K] as the column-major K x N transposed),
 * the heuristic's first CUDA_LT_CANDIDATES results for the workspace and the operands' actual
 * alignments (views need not be 256-byte aligned), and the fastest of them and the plain cuBLAS
 * call, timed (cuda_lt_choose), which also leaves g's output. TEMPER_EXPERT_PICK narrows the
 * candidates to the one PyTorch would run (the heuristic asked for 1 result, or the plain call)
 * and TEMPER_EXPERT_LT_WORKSPACE_KIB the workspace (cuda_expert_opts_parse). */
static int cuda_lt_plan_make(struct cuda_ctx *c, struct cuda_lt_plan *p, const struct cuda_gemm_call *g,
                             const unsigned align[4], char *msg, size_t msg_size)
{
    const int kind = g->rt->kind, m = g->m, n = g->n, k = g->k;
    struct cuda_expert_opts opts;
    int err = cuda_expert_opts_parse(getenv("TEMPER_EXPERT_PICK"), getenv("TEMPER_EXPERT_LT_WORKSPACE_KIB"), &opts,
                                     msg, msg_size);
    if (err)
        return err;
    const int plain = kind != CUDA_EXPERT_BIAS_GELU_BF16; /* the routine has a plain cuBLAS call */
    const int wanted = opts.pick == CUDA_PICK_FASTEST ? CUDA_LT_CANDIDATES : 1; /* heuristic results asked for */
    p->ws_bytes = opts.lt_workspace_bytes;
    const char *what = "cublasLtMatmulDescCreate";
    cublasStatus_t s = cuda_lt_layouts_make(p, g, &what);
    const int gemv = kind == CUDA_EXPERT_GEMV_BF16;
    cublasLtMatmulHeuristicResult_t res[CUDA_LT_CANDIDATES];
    memset(res, 0, sizeof res);
    int found = 0;
    s = cuda_lt_heuristic(c, p, s, gemv, align, wanted, res, &found, &what);
    int usable = 0; /* the results whose state is a success, packed to the front */
    for (int i = 0; s == CUBLAS_STATUS_SUCCESS && i < found && i < wanted; i++)
        if (res[i].state == CUBLAS_STATUS_SUCCESS)
            res[usable++] = res[i];
    if (s == CUBLAS_STATUS_SUCCESS && usable == 0 && kind == CUDA_EXPERT_BIAS_GELU_BF16)
        s = found > 0 ? res[0].state : CUBLAS_STATUS_NOT_SUPPORTED; /* no algorithm for this problem */
    if (s != CUBLAS_STATUS_SUCCESS && plain)
        s = CUBLAS_STATUS_SUCCESS, usable = 0; /* cuBLASLt offers nothing here: the plain call alone */
    if (opts.pick == CUDA_PICK_CUBLAS && plain)
        usable = 0; /* the plain call alone, as torch.matmul makes it */
    /* the plain call is a candidate when the pick is the fastest, or the heuristic has nothing */
    const int first = !plain || (opts.pick != CUDA_PICK_FASTEST && usable > 0) ? 1 : 0;
    if (s != CUBLAS_STATUS_SUCCESS) {
        char where[192];
        snprintf(where, sizeof where, "%s: %s M=%d N=%d K=%d", g->rt->name, what, m, n, k);
        err = cuda_cublaslt_fail(s, msg, msg_size, where);
    } else
        err = cuda_lt_choose(c, p, res, usable, first, opts.pick, g, msg, msg_size);
    if (err) {
        cuda_lt_plan_free(p);
        return err;
    }
    p->kind = kind;
    p->m = m;
    p->n = n;
    p->k = k;
    memcpy(p->align, align, sizeof p->align);
    p->valid = 1;
    return 0;
}

/* Runs g with the plan chosen for its routine, shape and alignments, choosing one (timing the
 * candidates, which also computes g) at the first call of each. */
static int cuda_gemm_run(struct cuda_ctx *c, const struct cuda_gemm_call *g, char *msg, size_t msg_size)
{
    const unsigned align[4] = {cuda_lt_alignment(g->out), cuda_lt_alignment(g->in1), cuda_lt_alignment(g->in2),
                               g->bias ? cuda_lt_alignment(g->bias) : 256u};
    if (!c->lt_cache && !(c->lt_cache = calloc(1, sizeof *c->lt_cache)))
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "%s: no memory for the expert's plans", g->rt->name);
    struct cuda_lt_cache *cache = c->lt_cache;
    struct cuda_lt_plan *p = NULL;
    int victim = -1; /* a free slot, else the least recently used plan */
    for (int i = 0; i < CUDA_LT_PLANS && !p; i++) {
        struct cuda_lt_plan *q = &cache->plans[i];
        if (q->valid && q->kind == (int)g->rt->kind && q->m == g->m && q->n == g->n && q->k == g->k &&
            memcmp(q->align, align, sizeof align) == 0)
            p = q;
        else if (victim < 0 || (cache->plans[victim].valid && (!q->valid || q->used < cache->plans[victim].used)))
            victim = i;
    }
    cache->clock++;
    if (!p) {
        struct cuda_lt_plan *q = &cache->plans[victim];
        if (q->valid) {
            cuda_cu.cuCtxSynchronize(); /* queued matmuls may still read its descriptors */
            cuda_lt_plan_free(q);
        }
        int err = cuda_lt_plan_make(c, q, g, align, msg, msg_size);
        q->used = cache->clock;
        return err;
    }
    p->used = cache->clock;
    const char *what = "cublasLtMatmul";
    cublasStatus_t s = p->use_cublas ? cuda_gemm_cublas(c, g, &what) : cuda_gemm_lt(c, p, &p->algo, g, &what);
    if (s != CUBLAS_STATUS_SUCCESS) {
        char where[192];
        snprintf(where, sizeof where, "%s: %s M=%d N=%d K=%d", g->rt->name, what, g->m, g->n, g->k);
        return p->use_cublas ? cuda_cublas_fail(s, msg, msg_size, where) : cuda_cublaslt_fail(s, msg, msg_size, where);
    }
    return 0;
}

/* The expert routine named routine, or NULL (msg says which there are). */
static const struct cuda_expert_routine *cuda_expert_find(const char *routine, char *msg, size_t msg_size)
{
    const struct cuda_expert_routine *rt = cuda_expert_routines;
    while (rt->name && (!routine || strcmp(rt->name, routine) != 0))
        rt++;
    if (!rt->name) {
        char known[512];
        size_t used = 0;
        known[0] = '\0';
        for (const struct cuda_expert_routine *q = cuda_expert_routines; q->name && used < sizeof known; q++)
            used += (size_t)snprintf(known + used, sizeof known - used, "%s%s",
                                     q == cuda_expert_routines ? "" : ", ", q->name);
        temper_fail(msg, msg_size, TEMPER_EUNSUPPORTED, "the CUDA backend has no expert routine '%s' (it has %s)",
                    routine ? routine : "(null)", known);
        return NULL;
    }
    return rt;
}

/* Checks that rt is given its buffers and scalars, each scalar in [0, INT_MAX]. */
static int cuda_expert_check_counts(const struct cuda_expert_routine *rt, int nbufs, struct temper_dbuf *const *bufs,
                                    int nscalars, const int64_t *scalars, char *msg, size_t msg_size)
{
    char list[64];
    if (nbufs != rt->nbufs || !bufs) {
        size_t used = 0;
        for (int i = 0; i < rt->nbufs && used < sizeof list; i++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", rt->buf_names[i]);
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "%s: %d buffers given, %d expected (%s)", rt->name, nbufs,
                           rt->nbufs, list);
    }
    if (nscalars != rt->nscalars || !scalars) {
        size_t used = 0;
        for (int i = 0; i < rt->nscalars && used < sizeof list; i++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", rt->scalar_names[i]);
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "%s: %d scalars given, %d expected (%s)", rt->name,
                           nscalars, rt->nscalars, list);
    }
    for (int i = 0; i < rt->nscalars; i++)
        if (scalars[i] < 0 || scalars[i] > INT_MAX) {
            char values[128];
            size_t used = 0;
            for (int j = 0; j < rt->nscalars && used < sizeof values; j++)
                used += (size_t)snprintf(values + used, sizeof values - used, "%s%s = %lld", j ? ", " : "",
                                         rt->scalar_names[j], (long long)scalars[j]);
            return temper_fail(msg, msg_size, TEMPER_EINVALID, "%s: %s (each must lie in [0, %d])", rt->name, values,
                               INT_MAX);
        }
    return 0;
}

/* The problem as M x N x K (a GEMM's from its scalars; a GEMV's M = N_task, N = 1) and each
 * buffer's rows x columns. */
static void cuda_expert_dims(const struct cuda_expert_routine *rt, const int64_t *scalars, int64_t *mnk,
                             int64_t rows[4], int64_t cols[4])
{
    int64_t m, n, k;
    switch (rt->kind) {
    case CUDA_EXPERT_GEMV_BF16:
        m = scalars[0], n = 1, k = scalars[1];
        rows[0] = m, cols[0] = 1; /* y */
        rows[1] = m, cols[1] = k; /* W */
        rows[2] = k, cols[2] = 1; /* x */
        break;
    case CUDA_EXPERT_BIAS_GELU_BF16:
        m = scalars[0], n = scalars[1], k = scalars[2];
        rows[0] = m, cols[0] = n; /* Y */
        rows[1] = m, cols[1] = k; /* X */
        rows[2] = k, cols[2] = n; /* W */
        rows[3] = 1, cols[3] = n; /* bias */
        break;
    default:
        m = scalars[0];
        n = rt->nscalars == 1 ? scalars[0] : scalars[1];
        k = rt->nscalars == 1 ? scalars[0] : scalars[2];
        rows[0] = m, cols[0] = n; /* C */
        rows[1] = m, cols[1] = k; /* A */
        rows[2] = k, cols[2] = n; /* B */
        break;
    }
    mnk[0] = m, mnk[1] = n, mnk[2] = k;
}

/* Checks that each buffer of rt is there, holds its rows x columns and is aligned to its elements. */
static int cuda_expert_check_bufs(const struct cuda_expert_routine *rt, struct temper_dbuf *const *bufs,
                                  const int64_t rows[4], const int64_t cols[4], char *msg, size_t msg_size)
{
    for (int i = 0; i < rt->nbufs; i++) {
        /* each dimension is below 2^31, so the product of two and the element size fits */
        uint64_t need = (uint64_t)rows[i] * (uint64_t)cols[i] * rt->elem_size;
        if (!bufs[i])
            return temper_fail(msg, msg_size, TEMPER_EINVALID, "%s: buffer %d (%s) is missing", rt->name, i,
                               rt->buf_names[i]);
        if (bufs[i]->size < need)
            return temper_fail(msg, msg_size, TEMPER_EINVALID,
                               "%s: buffer %d (%s, %lld x %lld elements of %zu bytes) needs %llu bytes, has %zu",
                               rt->name, i, rt->buf_names[i], (long long)rows[i], (long long)cols[i], rt->elem_size,
                               (unsigned long long)need, bufs[i]->size);
        if (need && bufs[i]->ptr % rt->elem_size)
            return temper_fail(msg, msg_size, TEMPER_EINVALID, "%s: buffer %d (%s) is not aligned to %zu bytes",
                               rt->name, i, rt->buf_names[i], rt->elem_size);
    }
    return 0;
}

/* Queues the vendor-library routine named routine on the legacy default stream, in order with
 * launches, so that timer_start/timer_stop measure it like a kernel. bufs are borrowed; every
 * array is row-major:
 *  - cublas_sgemm (fp32), cublas_hgemm_bf16 (bf16, fp32 compute), cublas_sgemm_tf32 (fp32 data,
 *    TF32 compute): C[M,N] = A[M,K] * B[K,N]; bufs = {C, A, B}, scalars = {M, N, K};
 *    cublas_bf16_probe: the same as cublas_hgemm_bf16 with scalars = {n}, M = N = K = n.
 *    Row-major C = A * B is computed as the column-major C^T = B^T * A^T, so no transposes.
 *  - cublas_gemv_bf16: y[N] = W[N,K] x[K] in bf16 with fp32 compute; bufs = {y, W, x},
 *    scalars = {N, K}; a cublasGemmEx with n = 1 and W read column-major as K x N, transposed.
 *  - cublaslt_gemm_bias_gelu_bf16: Y[M,N] = gelu_tanh(X[M,K] W[K,N] + bias[N]) in bf16 with fp32
 *    compute (cuBLASLt's GELU_BIAS epilogue); bufs = {Y, X, W, bias}, scalars = {M, N, K}; K = 0
 *    with a non-empty Y is TEMPER_EUNSUPPORTED.
 * The first call of a routine makes the cuBLAS and cuBLASLt handles, and the first call on a shape
 * and set of operand alignments times the candidate configurations (the plain call and up to 8 of
 * cuBLASLt's) and keeps the fastest (cuda_gemm_run; the call's output is the kept one's): callers
 * should warm up before timing. TEMPER_EXPERT_PICK=first or cublas narrows the candidates to the
 * one configuration PyTorch runs, TEMPER_EXPERT_LT_WORKSPACE_KIB sets cuBLASLt's workspace
 * (cuda_blas.h); a value of either not understood is TEMPER_EINVALID. An unknown routine or a
 * library that does not load is TEMPER_EUNSUPPORTED; bad counts, dimensions or buffers too small
 * or misaligned are TEMPER_EINVALID; a failing library call is TEMPER_ELAUNCH. */
int cuda_expert(void *ctx, const char *routine, int nbufs, struct temper_dbuf *const *bufs, int nscalars,
                       const int64_t *scalars, char *msg, size_t msg_size)
{
    struct cuda_ctx *c = ctx;
    const struct cuda_expert_routine *rt = cuda_expert_find(routine, msg, msg_size);
    if (!rt)
        return TEMPER_EUNSUPPORTED;
    int err = cuda_expert_check_counts(rt, nbufs, bufs, nscalars, scalars, msg, msg_size);
    if (err)
        return err;
    /* the problem as M x N x K (a GEMV is M = N_task, N = 1) and each buffer's rows x columns */
    int64_t mnk[3], rows[4] = {0}, cols[4] = {0};
    cuda_expert_dims(rt, scalars, mnk, rows, cols);
    const int64_t m = mnk[0], n = mnk[1], k = mnk[2];
    if ((err = cuda_expert_check_bufs(rt, bufs, rows, cols, msg, msg_size)) != 0)
        return err;
    const int lt_only = rt->kind == CUDA_EXPERT_BIAS_GELU_BF16;
    err = lt_only ? 0 : cuda_load_cublas(msg, msg_size);
    if (!err)
        err = cuda_load_cublaslt(msg, msg_size);
    if (err)
        return err;
    if ((err = cuda_check_alive(c, msg, msg_size)) != 0)
        return err;
    if (!lt_only && (err = cuda_cublas_handle(c, msg, msg_size)) != 0)
        return err;
    if ((err = cuda_cublaslt_handle(c, msg, msg_size)) != 0)
        return err;
    if (m == 0 || n == 0)
        return 0; /* the output is empty */
    const struct cuda_gemm_call g = {rt, (int)m, (int)n, (int)k, bufs[0]->ptr, bufs[1]->ptr, bufs[2]->ptr,
                                     rt->nbufs > 3 ? bufs[3]->ptr : 0};
    if (k == 0) {
        if (lt_only)
            return temper_fail(msg, msg_size, TEMPER_EUNSUPPORTED,
                               "%s: K = 0 (Y = gelu(bias)) is not something cuBLASLt computes", rt->name);
        const char *what = "cuBLAS";
        cublasStatus_t s = cuda_gemm_cublas(c, &g, &what); /* C = 0: nothing to choose */
        if (s != CUBLAS_STATUS_SUCCESS) {
            char where[192];
            snprintf(where, sizeof where, "%s: %s M=%d N=%d K=0", rt->name, what, g.m, g.n);
            return cuda_cublas_fail(s, msg, msg_size, where);
        }
        return 0;
    }
    return cuda_gemm_run(c, &g, msg, msg_size);
}
