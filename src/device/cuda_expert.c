/* cuda_expert.c: vendor-library experts of the CUDA backend: cuBLAS and cuBLASLt, opened with
 * dlopen at first use, their handles and workspaces, and the routines expert() queues. */
#include "cuda_impl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the slice of cublas_api.h and library_types.h used here (values as in CUDA 13.0; the
 * same in 12.x) ---- */

enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_ALLOC_FAILED = 3,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_ARCH_MISMATCH = 8,
    CUBLAS_STATUS_MAPPING_ERROR = 11,
    CUBLAS_STATUS_EXECUTION_FAILED = 13,
    CUBLAS_STATUS_INTERNAL_ERROR = 14,
    CUBLAS_STATUS_NOT_SUPPORTED = 15,
    CUBLAS_STATUS_LICENSE_ERROR = 16,
};

enum {
    CUBLAS_OP_N = 0,                      /* cublasOperation_t */
    CUBLAS_OP_T = 1,
    CUBLAS_DEFAULT_MATH = 0,              /* cublasMath_t: plain fp32, no TF32 */
    CUBLAS_COMPUTE_32F = 68,              /* cublasComputeType_t */
    CUBLAS_COMPUTE_32F_FAST_TF32 = 77,    /* inputs rounded to TF32 on tensor cores */
    CUBLAS_GEMM_DEFAULT = -1,             /* cublasGemmAlgo_t */
    CUDA_R_32F = 0,                       /* cudaDataType */
    CUDA_R_16BF = 14,
};

/* Workspace given to cuBLAS (cublasSetWorkspace), allocated with the handle so that no timed
 * call allocates; 32 MiB is NVIDIA's recommendation for Hopper and later. */
#define CUDA_CUBLAS_WORKSPACE_BYTES ((size_t)32 * 1024 * 1024)

/* cuBLAS; filled once by cuda_load_cublas, read-only afterwards. */
struct cuda_cublas_api {
    cublasStatus_t (*cublasCreate)(cublasHandle_t *handle);
    cublasStatus_t (*cublasDestroy)(cublasHandle_t handle);
    cublasStatus_t (*cublasSetStream)(cublasHandle_t handle, CUstream stream);
    cublasStatus_t (*cublasSetMathMode)(cublasHandle_t handle, int mode);
    cublasStatus_t (*cublasSgemm)(cublasHandle_t handle, int transa, int transb, int m, int n, int k,
                                  const float *alpha, const float *a, int lda, const float *b, int ldb,
                                  const float *beta, float *c, int ldc);
    cublasStatus_t (*cublasGemmEx)(cublasHandle_t handle, int transa, int transb, int m, int n, int k,
                                   const void *alpha, const void *a, int a_type, int lda, const void *b, int b_type,
                                   int ldb, const void *beta, void *c, int c_type, int ldc, int compute_type,
                                   int algo);
    /* optional (NULL where the library lacks them) */
    cublasStatus_t (*cublasSetWorkspace)(cublasHandle_t handle, void *workspace, size_t bytes);
    const char *(*cublasGetStatusString)(cublasStatus_t status);
};

static struct cuda_cublas_api cuda_cb;
static struct cuda_lib cuda_cublas_lib = {PTHREAD_ONCE_INIT, NULL, NULL, 0, ""};
static const char *const cuda_cublas_names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so",
                                                "/usr/local/cuda/lib64/libcublas.so", NULL};

#define CUBLAS_SYM(field, n1) {{n1, NULL, NULL}, &cuda_cb.field}

static void cuda_load_cublas_once(void)
{
    static const struct cuda_sym syms[] = {
        CUBLAS_SYM(cublasCreate, "cublasCreate_v2"),
        CUBLAS_SYM(cublasDestroy, "cublasDestroy_v2"),
        CUBLAS_SYM(cublasSetStream, "cublasSetStream_v2"),
        CUBLAS_SYM(cublasSetMathMode, "cublasSetMathMode"),
        CUBLAS_SYM(cublasSgemm, "cublasSgemm_v2"),
        CUBLAS_SYM(cublasGemmEx, "cublasGemmEx"),
        {{NULL, NULL, NULL}, NULL},
    };
    cuda_open_lib(&cuda_cublas_lib, "cuBLAS", cuda_cublas_names, syms);
    if (cuda_cublas_lib.err)
        return;
    void *p = dlsym(cuda_cublas_lib.handle, "cublasSetWorkspace_v2");
    memcpy(&cuda_cb.cublasSetWorkspace, &p, sizeof p);
    p = dlsym(cuda_cublas_lib.handle, "cublasGetStatusString");
    memcpy(&cuda_cb.cublasGetStatusString, &p, sizeof p);
}

/* Loads libcublas once per process (thread-safe); TEMPER_EUNSUPPORTED with the libraries tried
 * and dlerror's text in msg when it does not load. */
static int cuda_load_cublas(char *msg, size_t msg_size)
{
    pthread_once(&cuda_cublas_lib.once, cuda_load_cublas_once);
    if (cuda_cublas_lib.err)
        return temper_fail(msg, msg_size, TEMPER_EUNSUPPORTED, "%s", cuda_cublas_lib.msg);
    return 0;
}

/* ---- the slice of cublasLt.h used here (values as in CUDA 13.0; the same in 12.x) ---- */

typedef struct {
    cublasLtMatmulAlgo_t algo;
    size_t workspaceSize;
    cublasStatus_t state;
    float wavesCount;
    int reserved[4];
} cublasLtMatmulHeuristicResult_t;

enum {
    CUBLASLT_MATMUL_DESC_EPILOGUE = 7,            /* uint32_t, a cublasLtEpilogue_t */
    CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8,        /* const void * */
    CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE = 26,     /* int32_t, a cudaDataType */
    CUBLASLT_EPILOGUE_GELU_BIAS = 36,             /* CUBLASLT_EPILOGUE_GELU (32) | CUBLASLT_EPILOGUE_BIAS (4) */
    CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1, /* uint64_t */
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5, /* uint32_t each, default 256 */
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8,
};

/* cuBLASLt's workspace, allocated with its handle (the same size as cuBLAS's). */
#define CUDA_CUBLASLT_WORKSPACE_BYTES ((size_t)32 * 1024 * 1024)

/* cuBLASLt; filled once by cuda_load_cublaslt, read-only afterwards. */
struct cuda_cublaslt_api {
    cublasStatus_t (*cublasLtCreate)(cublasLtHandle_t *handle);
    cublasStatus_t (*cublasLtDestroy)(cublasLtHandle_t handle);
    cublasStatus_t (*cublasLtMatmulDescCreate)(cublasLtMatmulDesc_t *desc, int compute_type, int scale_type);
    cublasStatus_t (*cublasLtMatmulDescDestroy)(cublasLtMatmulDesc_t desc);
    cublasStatus_t (*cublasLtMatmulDescSetAttribute)(cublasLtMatmulDesc_t desc, int attr, const void *buf,
                                                     size_t bytes);
    cublasStatus_t (*cublasLtMatrixLayoutCreate)(cublasLtMatrixLayout_t *layout, int type, uint64_t rows,
                                                 uint64_t cols, int64_t ld);
    cublasStatus_t (*cublasLtMatrixLayoutDestroy)(cublasLtMatrixLayout_t layout);
    cublasStatus_t (*cublasLtMatmulPreferenceCreate)(cublasLtMatmulPreference_t *pref);
    cublasStatus_t (*cublasLtMatmulPreferenceDestroy)(cublasLtMatmulPreference_t pref);
    cublasStatus_t (*cublasLtMatmulPreferenceSetAttribute)(cublasLtMatmulPreference_t pref, int attr,
                                                           const void *buf, size_t bytes);
    cublasStatus_t (*cublasLtMatmulAlgoGetHeuristic)(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                                     cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                                     cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                                     cublasLtMatmulPreference_t pref, int requested,
                                                     cublasLtMatmulHeuristicResult_t *results, int *returned);
    cublasStatus_t (*cublasLtMatmul)(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void *alpha,
                                     const void *a, cublasLtMatrixLayout_t a_layout, const void *b,
                                     cublasLtMatrixLayout_t b_layout, const void *beta, const void *c,
                                     cublasLtMatrixLayout_t c_layout, void *d, cublasLtMatrixLayout_t d_layout,
                                     const cublasLtMatmulAlgo_t *algo, void *workspace, size_t workspace_bytes,
                                     CUstream stream);
    /* optional (NULL where the library lacks it) */
    const char *(*cublasLtGetStatusString)(cublasStatus_t status);
};

static struct cuda_cublaslt_api cuda_lt;
static struct cuda_lib cuda_cublaslt_lib = {PTHREAD_ONCE_INIT, NULL, NULL, 0, ""};
static const char *const cuda_cublaslt_names[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so",
                                                  "/usr/local/cuda/lib64/libcublasLt.so", NULL};

#define CUBLASLT_SYM(field) {{#field, NULL, NULL}, &cuda_lt.field}

static void cuda_load_cublaslt_once(void)
{
    static const struct cuda_sym syms[] = {
        CUBLASLT_SYM(cublasLtCreate),
        CUBLASLT_SYM(cublasLtDestroy),
        CUBLASLT_SYM(cublasLtMatmulDescCreate),
        CUBLASLT_SYM(cublasLtMatmulDescDestroy),
        CUBLASLT_SYM(cublasLtMatmulDescSetAttribute),
        CUBLASLT_SYM(cublasLtMatrixLayoutCreate),
        CUBLASLT_SYM(cublasLtMatrixLayoutDestroy),
        CUBLASLT_SYM(cublasLtMatmulPreferenceCreate),
        CUBLASLT_SYM(cublasLtMatmulPreferenceDestroy),
        CUBLASLT_SYM(cublasLtMatmulPreferenceSetAttribute),
        CUBLASLT_SYM(cublasLtMatmulAlgoGetHeuristic),
        CUBLASLT_SYM(cublasLtMatmul),
        {{NULL, NULL, NULL}, NULL},
    };
    cuda_open_lib(&cuda_cublaslt_lib, "cuBLASLt", cuda_cublaslt_names, syms);
    if (cuda_cublaslt_lib.err)
        return;
    void *p = dlsym(cuda_cublaslt_lib.handle, "cublasLtGetStatusString");
    memcpy(&cuda_lt.cublasLtGetStatusString, &p, sizeof p);
}

/* Loads libcublasLt once per process (thread-safe); TEMPER_EUNSUPPORTED with the libraries tried
 * and dlerror's text in msg when it does not load. */
static int cuda_load_cublaslt(char *msg, size_t msg_size)
{
    pthread_once(&cuda_cublaslt_lib.once, cuda_load_cublaslt_once);
    if (cuda_cublaslt_lib.err)
        return temper_fail(msg, msg_size, TEMPER_EUNSUPPORTED, "%s", cuda_cublaslt_lib.msg);
    return 0;
}

/* Frees c's cuBLASLt plan's descriptors (cuBLASLt is loaded when a plan exists). */
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

/* Frees c's cuBLAS and cuBLASLt handles, their workspaces and the cuBLASLt plan; c's context is
 * current. */
void cuda_expert_free(struct cuda_ctx *c)
{
    if (c->cublas)
        cuda_cb.cublasDestroy(c->cublas); /* waits for its work, before its workspace goes */
    if (c->cublas_workspace)
        cuda_cu.cuMemFree(c->cublas_workspace);
    if (c->cublaslt) {
        cuda_cu.cuCtxSynchronize(); /* cublasLtDestroy does not wait for queued matmuls using the workspace */
        cuda_lt_plan_free(&c->lt_plan);
        cuda_lt.cublasLtDestroy(c->cublaslt);
    }
    if (c->cublaslt_workspace)
        cuda_cu.cuMemFree(c->cublaslt_workspace);
}

/* ---- expert baselines (cuBLAS) ---- */

/* The name of a cuBLAS status, as in cublas_api.h. */
static const char *cuda_cublas_status_name(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "CUBLAS_STATUS_UNKNOWN";
    }
}

/* Turns a failed cuBLAS or cuBLASLt call into TEMPER_ELAUNCH (TEMPER_ENOMEM for an allocation
 * failure) with "what: CUBLAS_STATUS_X (text)" in msg; text from the library's own describer. */
static int cuda_blas_fail(cublasStatus_t s, const char *(*describe)(cublasStatus_t), char *msg, size_t msg_size,
                          const char *what)
{
    const char *text = describe ? describe(s) : NULL;
    return temper_fail(msg, msg_size, s == CUBLAS_STATUS_ALLOC_FAILED ? TEMPER_ENOMEM : TEMPER_ELAUNCH,
                       "%s: %s (%s, status %d)", what, cuda_cublas_status_name(s), text ? text : "no description",
                       (int)s);
}

static int cuda_cublas_fail(cublasStatus_t s, char *msg, size_t msg_size, const char *what)
{
    return cuda_blas_fail(s, cuda_cb.cublasGetStatusString, msg, msg_size, what);
}

static int cuda_cublaslt_fail(cublasStatus_t s, char *msg, size_t msg_size, const char *what)
{
    return cuda_blas_fail(s, cuda_lt.cublasLtGetStatusString, msg, msg_size, what);
}

/* Makes c's cuBLAS handle on first use (c's context is current): on the legacy default stream
 * like every other call here, with plain fp32 math (no TF32 unless a call asks for it) and a
 * workspace of its own, so that no later call allocates. */
static int cuda_cublas_handle(struct cuda_ctx *c, char *msg, size_t msg_size)
{
    if (c->cublas)
        return 0;
    cublasHandle_t h = NULL;
    cublasStatus_t s = cuda_cb.cublasCreate(&h);
    if (s != CUBLAS_STATUS_SUCCESS)
        return cuda_cublas_fail(s, msg, msg_size, "cublasCreate_v2");
    /* the stream first: setting it resets the workspace to cuBLAS's own pool */
    if ((s = cuda_cb.cublasSetStream(h, NULL)) != CUBLAS_STATUS_SUCCESS) {
        cuda_cb.cublasDestroy(h);
        return cuda_cublas_fail(s, msg, msg_size, "cublasSetStream_v2");
    }
    if ((s = cuda_cb.cublasSetMathMode(h, CUBLAS_DEFAULT_MATH)) != CUBLAS_STATUS_SUCCESS) {
        cuda_cb.cublasDestroy(h);
        return cuda_cublas_fail(s, msg, msg_size, "cublasSetMathMode");
    }
    if (cuda_cb.cublasSetWorkspace) {
        CUdeviceptr ws = 0;
        CUresult r = cuda_cu.cuMemAlloc(&ws, CUDA_CUBLAS_WORKSPACE_BYTES);
        if (r != CUDA_SUCCESS) {
            cuda_cb.cublasDestroy(h);
            return cuda_fail(c, r, TEMPER_EDEVICE, msg, msg_size, "allocating cuBLAS's workspace");
        }
        s = cuda_cb.cublasSetWorkspace(h, (void *)(uintptr_t)ws, CUDA_CUBLAS_WORKSPACE_BYTES);
        if (s != CUBLAS_STATUS_SUCCESS) {
            cuda_cb.cublasDestroy(h);
            cuda_cu.cuMemFree(ws);
            return cuda_cublas_fail(s, msg, msg_size, "cublasSetWorkspace_v2");
        }
        c->cublas_workspace = ws;
    }
    c->cublas = h;
    return 0;
}

/* Makes c's cuBLASLt handle and its workspace on first use (c's context is current). cuBLASLt
 * has no stream or math mode of its own: each cublasLtMatmul names the stream (the legacy
 * default one here) and its compute type. */
static int cuda_cublaslt_handle(struct cuda_ctx *c, char *msg, size_t msg_size)
{
    if (c->cublaslt)
        return 0;
    cublasLtHandle_t h = NULL;
    cublasStatus_t s = cuda_lt.cublasLtCreate(&h);
    if (s != CUBLAS_STATUS_SUCCESS)
        return cuda_cublaslt_fail(s, msg, msg_size, "cublasLtCreate");
    CUdeviceptr ws = 0;
    CUresult r = cuda_cu.cuMemAlloc(&ws, CUDA_CUBLASLT_WORKSPACE_BYTES);
    if (r != CUDA_SUCCESS) {
        cuda_lt.cublasLtDestroy(h);
        return cuda_fail(c, r, TEMPER_EDEVICE, msg, msg_size, "allocating cuBLASLt's workspace");
    }
    c->cublaslt = h;
    c->cublaslt_workspace = ws;
    return 0;
}

/* The alignment of a device address in bytes, as cuBLASLt's preferences count it (at most 256). */
static unsigned cuda_lt_alignment(CUdeviceptr p)
{
    unsigned long long low = p & (~p + 1); /* the lowest set bit; 0 for a null pointer */
    return low == 0 || low > 256 ? 256u : (unsigned)low;
}

/* Sets up c->lt_plan for the row-major Y[m,n] = gelu_tanh(X[m,k] W[k,n] + bias[n]) in bf16 with
 * fp32 compute, unless the plan already made fits (same sizes and operand alignments). cuBLASLt
 * is column-major, so it computes Y^T (n x m, ld n) = W^T (n x k, ld n) * X^T (k x m, ld k), all
 * untransposed, with the bias along the n rows of Y^T. The algorithm is the heuristic's first
 * choice for the workspace and the actual alignments of the operands (views need not be 256-byte
 * aligned). Descriptors and heuristics cost host time, so the plan is kept: a timed loop of calls
 * on the same shape queues only the matmul. */
static int cuda_lt_plan_make(struct cuda_ctx *c, int m, int n, int k, CUdeviceptr x, CUdeviceptr w, CUdeviceptr y,
                             CUdeviceptr bias, char *msg, size_t msg_size)
{
    struct cuda_lt_plan *p = &c->lt_plan;
    const unsigned align[4] = {cuda_lt_alignment(x), cuda_lt_alignment(w), cuda_lt_alignment(y),
                               cuda_lt_alignment(bias)};
    if (p->valid && p->m == m && p->n == n && p->k == k && memcmp(p->align, align, sizeof align) == 0)
        return 0;
    cuda_lt_plan_free(p);
    cublasLtMatmulPreference_t pref = NULL;
    const char *what = "cublasLtMatmulDescCreate";
    cublasStatus_t s = cuda_lt.cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    const uint32_t epilogue = CUBLASLT_EPILOGUE_GELU_BIAS;
    const int32_t bias_type = CUDA_R_16BF;
    const void *bias_ptr = (const void *)(uintptr_t)bias;
    if (s == CUBLAS_STATUS_SUCCESS) {
        what = "cublasLtMatmulDescSetAttribute (epilogue GELU_BIAS)";
        s = cuda_lt.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue);
    }
    if (s == CUBLAS_STATUS_SUCCESS) {
        what = "cublasLtMatmulDescSetAttribute (bias data type bf16)";
        s = cuda_lt.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                              sizeof bias_type);
    }
    if (s == CUBLAS_STATUS_SUCCESS) { /* the heuristic reads the bias pointer's alignment */
        what = "cublasLtMatmulDescSetAttribute (bias pointer)";
        s = cuda_lt.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr,
                                              sizeof bias_ptr);
    }
    if (s == CUBLAS_STATUS_SUCCESS) {
        what = "cublasLtMatrixLayoutCreate";
        s = cuda_lt.cublasLtMatrixLayoutCreate(&p->a, CUDA_R_16BF, (uint64_t)n, (uint64_t)k, n);
    }
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cuda_lt.cublasLtMatrixLayoutCreate(&p->b, CUDA_R_16BF, (uint64_t)k, (uint64_t)m, k);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cuda_lt.cublasLtMatrixLayoutCreate(&p->d, CUDA_R_16BF, (uint64_t)n, (uint64_t)m, n);
    if (s == CUBLAS_STATUS_SUCCESS) {
        what = "cublasLtMatmulPreferenceCreate";
        s = cuda_lt.cublasLtMatmulPreferenceCreate(&pref);
    }
    const uint64_t ws_bytes = CUDA_CUBLASLT_WORKSPACE_BYTES;
    if (s == CUBLAS_STATUS_SUCCESS) {
        what = "cublasLtMatmulPreferenceSetAttribute";
        s = cuda_lt.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                                    sizeof ws_bytes);
    }
    /* A is W, B is X, C and D are Y */
    const int align_attr[4] = {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                               CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    const uint32_t align_val[4] = {align[1], align[0], align[2], align[2]};
    for (int i = 0; i < 4 && s == CUBLAS_STATUS_SUCCESS; i++)
        s = cuda_lt.cublasLtMatmulPreferenceSetAttribute(pref, align_attr[i], &align_val[i], sizeof align_val[i]);
    cublasLtMatmulHeuristicResult_t result;
    memset(&result, 0, sizeof result);
    int found = 0;
    if (s == CUBLAS_STATUS_SUCCESS) {
        what = "cublasLtMatmulAlgoGetHeuristic";
        s = cuda_lt.cublasLtMatmulAlgoGetHeuristic(c->cublaslt, p->desc, p->a, p->b, p->d, p->d, pref, 1, &result,
                                              &found);
        if (s == CUBLAS_STATUS_SUCCESS && found < 1)
            s = CUBLAS_STATUS_NOT_SUPPORTED; /* no algorithm for this problem */
        else if (s == CUBLAS_STATUS_SUCCESS)
            s = result.state;
    }
    if (pref)
        cuda_lt.cublasLtMatmulPreferenceDestroy(pref);
    if (s != CUBLAS_STATUS_SUCCESS) {
        cuda_lt_plan_free(p);
        char where[192];
        snprintf(where, sizeof where, "cublaslt_gemm_bias_gelu_bf16: %s M=%d N=%d K=%d", what, m, n, k);
        return cuda_cublaslt_fail(s, msg, msg_size, where);
    }
    p->algo = result.algo;
    p->m = m;
    p->n = n;
    p->k = k;
    memcpy(p->align, align, sizeof align);
    p->valid = 1;
    return 0;
}

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
 * The first call of a routine makes the cuBLAS (or cuBLASLt) handle, cuBLASLt's first call on a
 * shape picks its algorithm, and the libraries load their kernels lazily, so callers should warm
 * up before timing. An unknown routine or a library that does not load is TEMPER_EUNSUPPORTED;
 * bad counts, dimensions or buffers too small or misaligned are TEMPER_EINVALID; a failing
 * library call is TEMPER_ELAUNCH. */
int cuda_expert(void *ctx, const char *routine, int nbufs, struct temper_dbuf *const *bufs, int nscalars,
                       const int64_t *scalars, char *msg, size_t msg_size)
{
    struct cuda_ctx *c = ctx;
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
        return temper_fail(msg, msg_size, TEMPER_EUNSUPPORTED,
                           "the CUDA backend has no expert routine '%s' (it has %s)", routine ? routine : "(null)",
                           known);
    }
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
    /* the problem as M x N x K (a GEMV is M = N_task, N = 1) and each buffer's rows x columns */
    int64_t m, n, k, rows[4] = {0}, cols[4] = {0};
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
    const int lt_routine = rt->kind == CUDA_EXPERT_BIAS_GELU_BF16;
    int err = lt_routine ? cuda_load_cublaslt(msg, msg_size) : cuda_load_cublas(msg, msg_size);
    if (err)
        return err;
    if ((err = cuda_check_alive(c, msg, msg_size)) != 0)
        return err;
    if ((err = lt_routine ? cuda_cublaslt_handle(c, msg, msg_size) : cuda_cublas_handle(c, msg, msg_size)) != 0)
        return err;
    if (m == 0 || n == 0)
        return 0; /* the output is empty */
    const int im = (int)m, in = (int)n, ik = (int)k;
    const float one = 1.0f, zero = 0.0f;
    char where[192];
    if (lt_routine) {
        if (k == 0)
            return temper_fail(msg, msg_size, TEMPER_EUNSUPPORTED,
                               "%s: K = 0 (Y = gelu(bias)) is not something cuBLASLt computes", rt->name);
        const CUdeviceptr y = bufs[0]->ptr, x = bufs[1]->ptr, w = bufs[2]->ptr, bias = bufs[3]->ptr;
        if ((err = cuda_lt_plan_make(c, im, in, ik, x, w, y, bias, msg, msg_size)) != 0)
            return err;
        const struct cuda_lt_plan *p = &c->lt_plan;
        const void *bias_ptr = (const void *)(uintptr_t)bias;
        cublasStatus_t s = cuda_lt.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr,
                                                             sizeof bias_ptr);
        const char *what = "cublasLtMatmulDescSetAttribute (bias pointer)";
        if (s == CUBLAS_STATUS_SUCCESS) {
            what = "cublasLtMatmul (bf16, fp32 compute, GELU_BIAS epilogue)";
            s = cuda_lt.cublasLtMatmul(c->cublaslt, p->desc, &one, (const void *)(uintptr_t)w, p->a,
                                  (const void *)(uintptr_t)x, p->b, &zero, (const void *)(uintptr_t)y, p->d,
                                  (void *)(uintptr_t)y, p->d, &p->algo, (void *)(uintptr_t)c->cublaslt_workspace,
                                  CUDA_CUBLASLT_WORKSPACE_BYTES, NULL);
        }
        if (s != CUBLAS_STATUS_SUCCESS) {
            snprintf(where, sizeof where, "%s: %s M=%d N=%d K=%d", rt->name, what, im, in, ik);
            return cuda_cublaslt_fail(s, msg, msg_size, where);
        }
        return 0;
    }
    const int ldc = in, lda = ik ? ik : 1, ldb = in; /* leading dimensions of the row-major arrays */
    const void *a = (const void *)(uintptr_t)bufs[1]->ptr, *b = (const void *)(uintptr_t)bufs[2]->ptr;
    void *cc = (void *)(uintptr_t)bufs[0]->ptr;
    cublasStatus_t s;
    const char *what;
    switch (rt->kind) {
    case CUDA_EXPERT_SGEMM:
        what = "cublasSgemm_v2";
        s = cuda_cb.cublasSgemm(c->cublas, CUBLAS_OP_N, CUBLAS_OP_N, in, im, ik, &one, b, ldb, a, lda, &zero, cc, ldc);
        break;
    case CUDA_EXPERT_GEMM_BF16:
        what = "cublasGemmEx (bf16, fp32 compute)";
        s = cuda_cb.cublasGemmEx(c->cublas, CUBLAS_OP_N, CUBLAS_OP_N, in, im, ik, &one, b, CUDA_R_16BF, ldb, a,
                            CUDA_R_16BF, lda, &zero, cc, CUDA_R_16BF, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        break;
    case CUDA_EXPERT_GEMV_BF16:
        /* W row-major [N,K] is column-major K x N with ld K; y (N x 1) = W^T x (K x 1) */
        what = "cublasGemmEx (bf16 GEMV, fp32 compute)";
        s = cuda_cb.cublasGemmEx(c->cublas, CUBLAS_OP_T, CUBLAS_OP_N, im, 1, ik, &one, a, CUDA_R_16BF, lda, b,
                            CUDA_R_16BF, lda, &zero, cc, CUDA_R_16BF, im, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        break;
    case CUDA_EXPERT_GEMM_TF32:
    default:
        what = "cublasGemmEx (fp32, TF32 compute)";
        s = cuda_cb.cublasGemmEx(c->cublas, CUBLAS_OP_N, CUBLAS_OP_N, in, im, ik, &one, b, CUDA_R_32F, ldb, a,
                            CUDA_R_32F, lda, &zero, cc, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F_FAST_TF32,
                            CUBLAS_GEMM_DEFAULT);
        break;
    }
    if (s != CUBLAS_STATUS_SUCCESS) {
        if (rt->kind == CUDA_EXPERT_GEMV_BF16)
            snprintf(where, sizeof where, "%s: %s N=%d K=%d", rt->name, what, im, ik);
        else
            snprintf(where, sizeof where, "%s: %s M=%d N=%d K=%d", rt->name, what, im, in, ik);
        return cuda_cublas_fail(s, msg, msg_size, where);
    }
    return 0;
}
