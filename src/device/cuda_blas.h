/* cuda_blas.h: the slice of cublas_api.h, library_types.h and cublasLt.h that the CUDA backend's
 * experts use (declared here, since no CUDA header is included), the libraries' entry points
 * (cuda_blas.c loads them with dlopen at first use) and the handles made on a context. Internal to
 * src/device: cuda_blas.c defines it, cuda_expert.c uses it. */
#ifndef TEMPER_CUDA_BLAS_H
#define TEMPER_CUDA_BLAS_H

#include "cuda_impl.h"

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
 * call allocates; 32 MiB is NVIDIA's recommendation for Hopper and later, and what PyTorch gives
 * on sm_90: getChosenWorkspaceSize() in aten/src/ATen/cuda/CublasHandlePool.cpp defaults to
 * 4096 * 8 * 1024 bytes there (CUBLAS_WORKSPACE_CONFIG unset). */
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

/* ---- the slice of cublasLt.h used here (values as in CUDA 13.0; the same in 12.x) ---- */

typedef struct {
    cublasLtMatmulAlgo_t algo;
    size_t workspaceSize;
    cublasStatus_t state;
    float wavesCount;
    int reserved[4];
} cublasLtMatmulHeuristicResult_t;

enum {
    CUBLASLT_MATMUL_DESC_TRANSA = 3,              /* int32_t, a cublasOperation_t */
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

/* cuBLASLt's workspace, allocated with its handle: the same size as cuBLAS's, as in PyTorch,
 * whose CUBLASLT_WORKSPACE_SIZE defaults to the cuBLAS workspace size while the two are unified
 * (TORCH_CUBLASLT_UNIFIED_WORKSPACE unset; parseCUDABlasLtWorkspaceSize in the same file; older
 * releases gave cuBLASLt 1024 KiB). */
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

extern struct cuda_cublas_api cuda_cb;     /* filled by cuda_load_cublas */
extern struct cuda_cublaslt_api cuda_lt; /* filled by cuda_load_cublaslt */

/* Load libcublas (libcublasLt) once per process (thread-safe); TEMPER_EUNSUPPORTED with the
 * libraries tried and dlerror's text in msg when it does not load. */
int cuda_load_cublas(char *msg, size_t msg_size);
int cuda_load_cublaslt(char *msg, size_t msg_size);

/* Turn a failed cuBLAS (cuBLASLt) call into TEMPER_ELAUNCH (TEMPER_ENOMEM for an allocation
 * failure) with "what: CUBLAS_STATUS_X (text)" in msg. */
int cuda_cublas_fail(cublasStatus_t s, char *msg, size_t msg_size, const char *what);
int cuda_cublaslt_fail(cublasStatus_t s, char *msg, size_t msg_size, const char *what);

/* How the experts pick a configuration (TEMPER_EXPERT_PICK): */
enum cuda_expert_pick {
    CUDA_PICK_FASTEST, /* "fastest" (default): the plain call and the heuristic's first 8, timed, the fastest kept */
    CUDA_PICK_FIRST,   /* "first": the heuristic asked for 1 result and that one run, as PyTorch's cuBLASLt path
                        * does (TORCH_BLAS_PREFER_CUBLASLT=1); the plain call where the heuristic offers none */
    CUDA_PICK_CUBLAS,  /* "cublas": the plain cuBLAS call alone, as PyTorch's default torch.matmul does
                        * (cublasGemmEx, cublasSgemm); "first" for the routine without one (GELU_BIAS) */
};

/* The experts' switches, read from the environment when a plan is made. */
struct cuda_expert_opts {
    enum cuda_expert_pick pick; /* TEMPER_EXPERT_PICK */
    size_t lt_workspace_bytes;  /* TEMPER_EXPERT_LT_WORKSPACE_KIB * 1024: cuBLASLt's workspace offered to the
                                 * heuristic and each matmul, at most CUDA_CUBLASLT_WORKSPACE_BYTES */
};

/* Parses the switches' texts (NULL or "": the default) into *o; TEMPER_EINVALID with the variable,
 * its value and what it accepts in msg when one is not understood. */
int cuda_expert_opts_parse(const char *pick, const char *lt_workspace_kib, struct cuda_expert_opts *o, char *msg,
                           size_t msg_size);

/* The name of a pick, as TEMPER_EXPERT_PICK spells it. */
const char *cuda_expert_pick_name(enum cuda_expert_pick pick);

/* Make c's cuBLAS (cuBLASLt) handle and workspace on first use; c's context is current. */
int cuda_cublas_handle(struct cuda_ctx *c, char *msg, size_t msg_size);
int cuda_cublaslt_handle(struct cuda_ctx *c, char *msg, size_t msg_size);

#endif
