/* cuda.c: the CUDA backend of device.h, on the driver API and NVRTC.
 * Neither cuda.h nor nvrtc.h is included: the few types, enum values and prototypes used are
 * declared here, and libcuda and libnvrtc are opened with dlopen at run time, so that one binary
 * builds without the CUDA toolkit and runs with or without a GPU.
 * All device work (launches, copies, memsets, timing events, cuBLAS and cuBLASLt calls) goes to
 * the legacy default stream of the device's primary context, so it runs in the order it was queued.
 * cuBLAS and cuBLASLt, used only for expert baselines, are opened the same way, at first use. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr and Dl_info */
#endif
#include "temper/device.h"

#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the slice of cuda.h and nvrtc.h used here (values as in CUDA 13.0) ---- */

typedef int CUresult; /* an enum in cuda.h; int-sized in every ABI CUDA supports */
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUevent_st *CUevent;
typedef struct CUstream_st *CUstream;
typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_LAUNCH_TIMEOUT = 702,
    CUDA_ERROR_ASSERT = 710,
    CUDA_ERROR_HARDWARE_STACK_ERROR = 714,
    CUDA_ERROR_ILLEGAL_INSTRUCTION = 715,
    CUDA_ERROR_MISALIGNED_ADDRESS = 716,
    CUDA_ERROR_INVALID_ADDRESS_SPACE = 717,
    CUDA_ERROR_INVALID_PC = 718,
    CUDA_ERROR_LAUNCH_FAILED = 719,
    CUDA_ERROR_TENSOR_MEMORY_LEAK = 721,
    CUDA_ERROR_ECC_UNCORRECTABLE = 214,
    CUDA_ERROR_CONTAINED = 226,
};

enum {
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
    CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13,
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36,
    CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37,
    CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};

enum {
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
    CU_EVENT_DEFAULT = 0,
    NVRTC_SUCCESS = 0,
    NVRTC_ERROR_COMPILATION = 6,
};

/* Dynamic shared memory every kernel may use without opting in. */
#define CUDA_SMEM_DEFAULT_BYTES ((size_t)48 * 1024)
/* Kernel arguments one launch may pass. */
#define CUDA_MAX_KARGS 256
/* Bytes staged from the host when filling with a pattern the memset calls cannot write. */
#define CUDA_FILL_STAGE_BYTES ((size_t)64 * 1024)
/* Scratch written by flush_cache when the device reports no L2 size. */
#define CUDA_FLUSH_FALLBACK_BYTES ((size_t)256 * 1024 * 1024)

/* ---- the entry points, resolved with dlsym ---- */

/* The driver API; filled once by cuda_load_driver, read-only afterwards. */
struct cuda_driver_api {
    CUresult (*cuInit)(unsigned int flags);
    CUresult (*cuDriverGetVersion)(int *version);
    CUresult (*cuDeviceGetCount)(int *count);
    CUresult (*cuDeviceGet)(CUdevice *dev, int ordinal);
    CUresult (*cuDeviceGetName)(char *name, int len, CUdevice dev);
    CUresult (*cuDeviceGetAttribute)(int *value, int attrib, CUdevice dev);
    CUresult (*cuDeviceTotalMem)(size_t *bytes, CUdevice dev);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice dev);
    CUresult (*cuDevicePrimaryCtxRelease)(CUdevice dev);
    CUresult (*cuCtxSetCurrent)(CUcontext ctx);
    CUresult (*cuCtxSynchronize)(void);
    CUresult (*cuMemAlloc)(CUdeviceptr *ptr, size_t bytes);
    CUresult (*cuMemFree)(CUdeviceptr ptr);
    CUresult (*cuMemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes);
    CUresult (*cuMemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);
    CUresult (*cuMemcpyDtoD)(CUdeviceptr dst, CUdeviceptr src, size_t bytes);
    CUresult (*cuMemsetD8)(CUdeviceptr dst, unsigned char value, size_t count);
    CUresult (*cuMemsetD16)(CUdeviceptr dst, unsigned short value, size_t count);
    CUresult (*cuMemsetD32)(CUdeviceptr dst, unsigned int value, size_t count);
    CUresult (*cuModuleLoadData)(CUmodule *mod, const void *image);
    CUresult (*cuModuleUnload)(CUmodule mod);
    CUresult (*cuModuleGetFunction)(CUfunction *fn, CUmodule mod, const char *name);
    CUresult (*cuFuncSetAttribute)(CUfunction fn, int attrib, int value);
    CUresult (*cuLaunchKernel)(CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                               unsigned int by, unsigned int bz, unsigned int smem_bytes, CUstream stream,
                               void **params, void **extra);
    CUresult (*cuEventCreate)(CUevent *ev, unsigned int flags);
    CUresult (*cuEventRecord)(CUevent ev, CUstream stream);
    CUresult (*cuEventSynchronize)(CUevent ev);
    CUresult (*cuEventElapsedTime)(float *ms, CUevent start, CUevent end);
    CUresult (*cuEventDestroy)(CUevent ev);
    CUresult (*cuGetErrorName)(CUresult err, const char **name);
    CUresult (*cuGetErrorString)(CUresult err, const char **text);
};

/* NVRTC; filled once by cuda_load_nvrtc, read-only afterwards. */
struct cuda_nvrtc_api {
    const char *(*nvrtcGetErrorString)(nvrtcResult err);
    nvrtcResult (*nvrtcVersion)(int *major, int *minor);
    nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram *prog, const char *src, const char *name, int num_headers,
                                      const char *const *headers, const char *const *include_names);
    nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram *prog);
    nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram prog, int num_options, const char *const *options);
    nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram prog, size_t *size);
    nvrtcResult (*nvrtcGetPTX)(nvrtcProgram prog, char *ptx);
    nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram prog, size_t *size);
    nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram prog, char *cubin);
    nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram prog, size_t *size);
    nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram prog, char *log);
};

/* One symbol to resolve: its names in order of preference, and where it goes. */
struct cuda_sym {
    const char *names[3]; /* NULL-terminated; the _v2 variant first where the driver has one */
    void *slot;           /* address of the function pointer to fill */
};

/* What loading a library produced; the failure message is kept to repeat it to every caller. */
struct cuda_lib {
    pthread_once_t once; /* guards the one load */
    void *handle;        /* dlopen handle; never closed */
    const char *name;    /* the name that loaded */
    int err;             /* 0 when every symbol resolved, else a TEMPER_E* code */
    char msg[1024];      /* why it failed */
};

static struct cuda_driver_api cu;
static struct cuda_nvrtc_api nv;
/* The CUDA toolkit's include folder (cuda_fp16.h, cuda_bf16.h, ...), which NVRTC does not search
 * by itself; "" when none was found. Set with NVRTC, read-only afterwards. */
static char cuda_include_dir[PATH_MAX];
static struct cuda_lib cuda_driver_lib = {PTHREAD_ONCE_INIT, NULL, NULL, 0, ""};
static struct cuda_lib cuda_nvrtc_lib = {PTHREAD_ONCE_INIT, NULL, NULL, 0, ""};

static const char *const cuda_driver_names[] = {"libcuda.so.1", "libcuda.so", NULL};
static const char *const cuda_nvrtc_names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
                                               "/usr/local/cuda/lib64/libnvrtc.so", NULL};

/* Opens the first of names that loads and resolves syms in it. On failure lib->msg lists every
 * name tried with dlerror's text for each. */
static void cuda_open_lib(struct cuda_lib *lib, const char *what, const char *const *names,
                          const struct cuda_sym *syms)
{
    size_t used = (size_t)snprintf(lib->msg, sizeof lib->msg, "%s could not be loaded; tried", what);
    for (int i = 0; names[i] && !lib->handle; i++) {
        lib->handle = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        lib->name = names[i];
        if (!lib->handle && used < sizeof lib->msg) {
            const char *e = dlerror();
            /* dlerror repeats the name: "libcuda.so.1: cannot open ..."; keep the reason only */
            size_t n = strlen(names[i]);
            if (e && !strncmp(e, names[i], n) && e[n] == ':')
                e += n + (e[n + 1] == ' ' ? 2 : 1);
            used += (size_t)snprintf(lib->msg + used, sizeof lib->msg - used, "%s %s (%s)", i ? "," : "",
                                     names[i], e ? e : "unknown dlopen error");
        }
    }
    if (!lib->handle) {
        lib->err = TEMPER_ENODEVICE;
        return;
    }
    for (int i = 0; syms[i].slot; i++) {
        void *p = NULL;
        for (int j = 0; j < 3 && syms[i].names[j] && !p; j++)
            p = dlsym(lib->handle, syms[i].names[j]);
        if (!p) {
            snprintf(lib->msg, sizeof lib->msg, "%s (%s) has no symbol %s (too old?)", what, lib->name,
                     syms[i].names[0]);
            lib->err = TEMPER_ENODEVICE;
            return;
        }
        memcpy(syms[i].slot, &p, sizeof p); /* object pointer to function pointer, POSIX-style */
    }
    lib->msg[0] = '\0';
}

#define CUDA_SYM1(field, n1) {{n1, NULL, NULL}, &cu.field}
#define CUDA_SYM2(field, n1, n2) {{n1, n2, NULL}, &cu.field}
#define NVRTC_SYM(field) {{#field, NULL, NULL}, &nv.field}

static void cuda_load_driver_once(void)
{
    static const struct cuda_sym syms[] = {
        CUDA_SYM1(cuInit, "cuInit"),
        CUDA_SYM1(cuDriverGetVersion, "cuDriverGetVersion"),
        CUDA_SYM1(cuDeviceGetCount, "cuDeviceGetCount"),
        CUDA_SYM1(cuDeviceGet, "cuDeviceGet"),
        CUDA_SYM1(cuDeviceGetName, "cuDeviceGetName"),
        CUDA_SYM1(cuDeviceGetAttribute, "cuDeviceGetAttribute"),
        CUDA_SYM1(cuDeviceTotalMem, "cuDeviceTotalMem_v2"),
        CUDA_SYM1(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
        CUDA_SYM2(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"),
        CUDA_SYM1(cuCtxSetCurrent, "cuCtxSetCurrent"),
        CUDA_SYM1(cuCtxSynchronize, "cuCtxSynchronize"),
        CUDA_SYM1(cuMemAlloc, "cuMemAlloc_v2"),
        CUDA_SYM1(cuMemFree, "cuMemFree_v2"),
        CUDA_SYM1(cuMemcpyHtoD, "cuMemcpyHtoD_v2"),
        CUDA_SYM1(cuMemcpyDtoH, "cuMemcpyDtoH_v2"),
        CUDA_SYM1(cuMemcpyDtoD, "cuMemcpyDtoD_v2"),
        CUDA_SYM1(cuMemsetD8, "cuMemsetD8_v2"),
        CUDA_SYM1(cuMemsetD16, "cuMemsetD16_v2"),
        CUDA_SYM1(cuMemsetD32, "cuMemsetD32_v2"),
        CUDA_SYM1(cuModuleLoadData, "cuModuleLoadData"),
        CUDA_SYM1(cuModuleUnload, "cuModuleUnload"),
        CUDA_SYM1(cuModuleGetFunction, "cuModuleGetFunction"),
        CUDA_SYM1(cuFuncSetAttribute, "cuFuncSetAttribute"),
        CUDA_SYM1(cuLaunchKernel, "cuLaunchKernel"),
        CUDA_SYM1(cuEventCreate, "cuEventCreate"),
        CUDA_SYM1(cuEventRecord, "cuEventRecord"),
        CUDA_SYM1(cuEventSynchronize, "cuEventSynchronize"),
        CUDA_SYM2(cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime"),
        CUDA_SYM2(cuEventDestroy, "cuEventDestroy_v2", "cuEventDestroy"),
        CUDA_SYM1(cuGetErrorName, "cuGetErrorName"),
        CUDA_SYM1(cuGetErrorString, "cuGetErrorString"),
        {{NULL, NULL, NULL}, NULL},
    };
    cuda_open_lib(&cuda_driver_lib, "the CUDA driver", cuda_driver_names, syms);
}

/* Sets cuda_include_dir to the first folder holding cuda_fp16.h among $CUDA_HOME/include,
 * $CUDA_PATH/include, the include folder beside the NVRTC that loaded, and /usr/local/cuda/include. */
static void cuda_find_include_dir(void)
{
    char candidates[4][PATH_MAX];
    int n = 0;
    const char *env[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH")};
    for (int i = 0; i < 2; i++)
        if (env[i] && *env[i])
            snprintf(candidates[n++], PATH_MAX, "%.*s/include", PATH_MAX - 16, env[i]);
    Dl_info where;
    void *sym;
    memcpy(&sym, &nv.nvrtcVersion, sizeof sym);
    char lib_path[PATH_MAX];
    if (dladdr(sym, &where) && where.dli_fname && realpath(where.dli_fname, lib_path)) {
        char *slash = strrchr(lib_path, '/');
        if (slash) {
            *slash = '\0'; /* the library's folder; its include folder is a sibling */
            snprintf(candidates[n++], PATH_MAX, "%.*s/../include", PATH_MAX - 16, lib_path);
        }
    }
    snprintf(candidates[n++], PATH_MAX, "/usr/local/cuda/include");
    for (int i = 0; i < n; i++) {
        char header[PATH_MAX + 16];
        snprintf(header, sizeof header, "%s/cuda_fp16.h", candidates[i]);
        if (access(header, R_OK) == 0) {
            if (!realpath(candidates[i], cuda_include_dir))
                snprintf(cuda_include_dir, sizeof cuda_include_dir, "%s", candidates[i]);
            return;
        }
    }
}

static void cuda_load_nvrtc_once(void)
{
    static const struct cuda_sym syms[] = {
        NVRTC_SYM(nvrtcGetErrorString),    NVRTC_SYM(nvrtcVersion),        NVRTC_SYM(nvrtcCreateProgram),
        NVRTC_SYM(nvrtcDestroyProgram),    NVRTC_SYM(nvrtcCompileProgram), NVRTC_SYM(nvrtcGetPTXSize),
        NVRTC_SYM(nvrtcGetPTX),            NVRTC_SYM(nvrtcGetCUBINSize),   NVRTC_SYM(nvrtcGetCUBIN),
        NVRTC_SYM(nvrtcGetProgramLogSize), NVRTC_SYM(nvrtcGetProgramLog),  {{NULL, NULL, NULL}, NULL},
    };
    cuda_open_lib(&cuda_nvrtc_lib, "NVRTC", cuda_nvrtc_names, syms);
    if (!cuda_nvrtc_lib.err)
        cuda_find_include_dir();
}

/* Loads libcuda once per process (thread-safe); fills msg on failure. */
static int cuda_load_driver(char *msg, size_t msg_size)
{
    pthread_once(&cuda_driver_lib.once, cuda_load_driver_once);
    if (cuda_driver_lib.err)
        return temper_fail(msg, msg_size, cuda_driver_lib.err, "%s", cuda_driver_lib.msg);
    return 0;
}

/* Loads libnvrtc once per process (thread-safe); fills msg on failure. */
static int cuda_load_nvrtc(char *msg, size_t msg_size)
{
    pthread_once(&cuda_nvrtc_lib.once, cuda_load_nvrtc_once);
    if (cuda_nvrtc_lib.err)
        return temper_fail(msg, msg_size, cuda_nvrtc_lib.err, "%s", cuda_nvrtc_lib.msg);
    return 0;
}

/* ---- the slice of cublas_api.h and library_types.h used here (values as in CUDA 13.0; the
 * same in 12.x) ---- */

typedef int cublasStatus_t;
typedef struct cublasContext *cublasHandle_t;

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

static struct cuda_cublas_api cb;
static struct cuda_lib cuda_cublas_lib = {PTHREAD_ONCE_INIT, NULL, NULL, 0, ""};
static const char *const cuda_cublas_names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so",
                                                "/usr/local/cuda/lib64/libcublas.so", NULL};

#define CUBLAS_SYM(field, n1) {{n1, NULL, NULL}, &cb.field}

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
    memcpy(&cb.cublasSetWorkspace, &p, sizeof p);
    p = dlsym(cuda_cublas_lib.handle, "cublasGetStatusString");
    memcpy(&cb.cublasGetStatusString, &p, sizeof p);
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

typedef struct cublasLtContext *cublasLtHandle_t;
typedef struct cuda_lt_desc_opaque *cublasLtMatmulDesc_t;         /* cublasLtMatmulDescOpaque_t * */
typedef struct cuda_lt_layout_opaque *cublasLtMatrixLayout_t;     /* cublasLtMatrixLayoutOpaque_t * */
typedef struct cuda_lt_pref_opaque *cublasLtMatmulPreference_t;   /* cublasLtMatmulPreferenceOpaque_t * */

/* Semi-opaque, passed by value: the layouts must match cublasLt.h exactly. */
typedef struct {
    uint64_t data[8];
} cublasLtMatmulAlgo_t;

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

static struct cuda_cublaslt_api lt;
static struct cuda_lib cuda_cublaslt_lib = {PTHREAD_ONCE_INIT, NULL, NULL, 0, ""};
static const char *const cuda_cublaslt_names[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so",
                                                  "/usr/local/cuda/lib64/libcublasLt.so", NULL};

#define CUBLASLT_SYM(field) {{#field, NULL, NULL}, &lt.field}

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
    memcpy(&lt.cublasLtGetStatusString, &p, sizeof p);
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

/* ---- errors ---- */

/* Writes "CUDA_ERROR_X: text" for r into out. */
static void cuda_error_text(CUresult r, char *out, size_t out_size)
{
    const char *name = NULL, *text = NULL;
    if (cu.cuGetErrorName)
        cu.cuGetErrorName(r, &name);
    if (cu.cuGetErrorString)
        cu.cuGetErrorString(r, &text);
    if (name)
        snprintf(out, out_size, "%s: %s", name, text ? text : "no description");
    else
        snprintf(out, out_size, "CUDA error %d", (int)r);
}

/* 1 when r reports a fault of a kernel that ran: the context is then unusable (sticky). */
static int cuda_is_kernel_fault(CUresult r)
{
    switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_TENSOR_MEMORY_LEAK:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTAINED:
        return 1;
    default:
        return 0;
    }
}

/* ---- the context and its objects ---- */

/* An opened device: its primary context, retained until close. */
struct cuda_ctx {
    CUdevice dev;                  /* the driver's device handle */
    CUcontext ctx;                 /* the primary context, retained */
    struct temper_device_info info; /* filled at open */
    CUevent timer_begin;           /* recorded by timer_start */
    CUevent timer_end;             /* recorded by timer_stop */
    int timer_running;             /* 1 between timer_start and timer_stop */
    CUdeviceptr flush_ptr;         /* flush_cache's scratch, 0 until first use */
    size_t flush_bytes;            /* its size */
    unsigned int flush_value;      /* changes each flush so no write is skipped */
    cublasHandle_t cublas;         /* made at the first expert call, NULL until then */
    CUdeviceptr cublas_workspace;  /* its workspace, 0 when cuBLAS uses its own pool */
    cublasLtHandle_t cublaslt;     /* made at the first cuBLASLt expert call, NULL until then */
    CUdeviceptr cublaslt_workspace; /* its workspace, made with it */
    struct cuda_lt_plan {          /* the last cuBLASLt GEMM + bias + GELU set up, reused while its key holds */
        int valid;                 /* 1 when the members below describe a plan */
        int m, n, k;               /* the row-major Y[m,n] = gelu(X[m,k] W[k,n] + bias) */
        unsigned align[4];         /* the alignments (bytes, at most 256) of X, W, Y and bias it was chosen for */
        cublasLtMatmulDesc_t desc; /* GELU_BIAS epilogue; the bias pointer is set again at every call */
        cublasLtMatrixLayout_t a, b, d; /* W^T (n x k), X^T (k x m), Y^T (n x m), column-major */
        cublasLtMatmulAlgo_t algo; /* cublasLtMatmulAlgoGetHeuristic's first choice */
    } lt_plan;
    CUresult fault;                /* the first kernel fault seen, CUDA_SUCCESS while none */
    char fault_msg[256];           /* its text, repeated by every later failing call */
};

/* A device allocation or a view of one. A view owns nothing and must be released before the
 * allocation it looks into. */
struct temper_dbuf {
    CUdeviceptr ptr; /* first byte */
    size_t size;     /* bytes */
    int owns;        /* 1 for an allocation (freed on release), 0 for a view */
};

/* A kernel; owned by its module, which frees it. */
struct temper_dkernel {
    CUfunction fn;                /* the driver's handle */
    size_t smem_optin_bytes;      /* dynamic shared memory opted into so far */
    struct temper_dkernel *next;  /* the module's next kernel */
    char name[];                  /* the kernel's name */
};

/* A loaded module and the kernels looked up in it. */
struct temper_dmodule {
    CUmodule mod;                   /* the driver's handle */
    struct temper_dkernel *kernels; /* freed with the module */
};

/* Makes c's context current on the calling thread, so a device opened on one thread works on
 * another; cheap (a thread-local store in the driver). */
static int cuda_bind(struct cuda_ctx *c, char *msg, size_t msg_size)
{
    CUresult r = cu.cuCtxSetCurrent(c->ctx);
    if (r != CUDA_SUCCESS) {
        char e[192];
        cuda_error_text(r, e, sizeof e);
        return temper_fail(msg, msg_size, TEMPER_EDEVICE, "cuCtxSetCurrent: %s", e);
    }
    return 0;
}

/* Turns a failed driver call into a temper error with "what: CUDA_ERROR_X: text" in msg.
 * Kernel faults are TEMPER_ELAUNCH wherever they surface (a copy or an event wait reports the
 * fault of the kernel before it) and are remembered; otherwise fallback is returned, or
 * TEMPER_ENOMEM for an out-of-memory error. */
static int cuda_fail(struct cuda_ctx *c, CUresult r, int fallback, char *msg, size_t msg_size, const char *what)
{
    char e[192];
    cuda_error_text(r, e, sizeof e);
    if (cuda_is_kernel_fault(r)) {
        if (c && c->fault == CUDA_SUCCESS) {
            c->fault = r;
            snprintf(c->fault_msg, sizeof c->fault_msg, "%s", e);
        }
        return temper_fail(msg, msg_size, TEMPER_ELAUNCH, "%s", e);
    }
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        fallback = TEMPER_ENOMEM;
    return temper_fail(msg, msg_size, fallback, "%s: %s", what, e);
}

/* ---- count, open, close, info ---- */

/* Loads both libraries and initialises the driver. Calls cuInit: a process that forks after this
 * cannot use CUDA in the child, so only the device worker should call it. */
static int cuda_init(char *msg, size_t msg_size)
{
    int err = cuda_load_driver(msg, msg_size);
    if (err)
        return err;
    err = cuda_load_nvrtc(msg, msg_size);
    if (err)
        return temper_fail(msg, msg_size, err, "the CUDA driver loaded, but %s", cuda_nvrtc_lib.msg);
    CUresult r = cu.cuInit(0);
    if (r != CUDA_SUCCESS) {
        char e[192];
        cuda_error_text(r, e, sizeof e);
        return temper_fail(msg, msg_size, TEMPER_ENODEVICE, "%s loaded, but cuInit failed: %s",
                           cuda_driver_lib.name, e);
    }
    return 0;
}

/* Sets *n to the number of CUDA devices. Zero devices is TEMPER_ENODEVICE too (with *n = 0), and
 * msg then says which libraries were tried or what the driver said. */
static int cuda_count(int *n, char *msg, size_t msg_size)
{
    *n = 0;
    int err = cuda_init(msg, msg_size);
    if (err)
        return err;
    int count = 0;
    CUresult r = cu.cuDeviceGetCount(&count);
    if (r != CUDA_SUCCESS)
        return cuda_fail(NULL, r, TEMPER_ENODEVICE, msg, msg_size, "cuDeviceGetCount");
    if (count <= 0)
        return temper_fail(msg, msg_size, TEMPER_ENODEVICE, "the CUDA driver loaded but reports no devices");
    *n = count;
    return 0;
}

/* Reads one integer attribute; 0 where the driver does not know it. */
static int cuda_attr(CUdevice dev, int attrib)
{
    int v = 0;
    if (cu.cuDeviceGetAttribute(&v, attrib, dev) != CUDA_SUCCESS)
        return 0;
    return v;
}

/* Fills info from the driver and NVRTC. */
static void cuda_fill_info(struct cuda_ctx *c, int index)
{
    struct temper_device_info *in = &c->info;
    memset(in, 0, sizeof *in);
    snprintf(in->backend, sizeof in->backend, "cuda");
    snprintf(in->language, sizeof in->language, "cuda");
    in->caps = TEMPER_DEVICE_CAP_OFFLINE_COMPILE | TEMPER_DEVICE_CAP_EXPERT;
    in->index = index;
    if (cu.cuDeviceGetName(in->name, (int)sizeof in->name, c->dev) != CUDA_SUCCESS)
        snprintf(in->name, sizeof in->name, "CUDA device %d", index);
    snprintf(in->vendor, sizeof in->vendor, "NVIDIA");
    snprintf(in->platform, sizeof in->platform, "CUDA");
    int v = 0;
    if (cu.cuDriverGetVersion(&v) == CUDA_SUCCESS)
        snprintf(in->driver_version, sizeof in->driver_version, "%d.%d", v / 1000, (v % 1000) / 10);
    int major = 0, minor = 0;
    if (nv.nvrtcVersion(&major, &minor) == NVRTC_SUCCESS)
        snprintf(in->compiler_version, sizeof in->compiler_version, "NVRTC %d.%d", major, minor);
    in->cc_major = cuda_attr(c->dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    in->cc_minor = cuda_attr(c->dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    snprintf(in->arch, sizeof in->arch, "sm_%d", in->cc_major * 10 + in->cc_minor);
    in->is_gpu = 1;
    in->compute_units = cuda_attr(c->dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    in->clock_mhz = cuda_attr(c->dev, CU_DEVICE_ATTRIBUTE_CLOCK_RATE) / 1000;
    in->mem_clock_mhz = cuda_attr(c->dev, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE) / 1000;
    in->mem_bus_bits = cuda_attr(c->dev, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
    size_t total = 0;
    if (cu.cuDeviceTotalMem(&total, c->dev) == CUDA_SUCCESS)
        in->global_mem_bytes = total;
    in->local_mem_bytes = (uint64_t)cuda_attr(c->dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    in->local_mem_optin_bytes = (uint64_t)cuda_attr(c->dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    if (in->local_mem_optin_bytes < in->local_mem_bytes)
        in->local_mem_optin_bytes = in->local_mem_bytes;
    in->cache_bytes = (uint64_t)cuda_attr(c->dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
    in->max_work_group = (size_t)cuda_attr(c->dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    in->base_align_bytes = 256;
}

/* Opens device index: retains its primary context and makes it current on this thread. *ctx is
 * owned by the backend; the caller gives it back with close. */
static int cuda_open(int index, void **ctx, char *msg, size_t msg_size)
{
    *ctx = NULL;
    int err = cuda_init(msg, msg_size);
    if (err)
        return err;
    struct cuda_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory opening CUDA device %d", index);
    CUresult r = cu.cuDeviceGet(&c->dev, index);
    if (r != CUDA_SUCCESS) {
        free(c);
        int count = 0;
        cu.cuDeviceGetCount(&count);
        return temper_fail(msg, msg_size, TEMPER_ENODEVICE, "no CUDA device %d (the driver reports %d)", index,
                           count);
    }
    r = cu.cuDevicePrimaryCtxRetain(&c->ctx, c->dev);
    if (r != CUDA_SUCCESS) {
        free(c);
        return cuda_fail(NULL, r, TEMPER_ENODEVICE, msg, msg_size, "cuDevicePrimaryCtxRetain");
    }
    if ((err = cuda_bind(c, msg, msg_size)) != 0)
        goto fail;
    if ((r = cu.cuEventCreate(&c->timer_begin, CU_EVENT_DEFAULT)) != CUDA_SUCCESS ||
        (r = cu.cuEventCreate(&c->timer_end, CU_EVENT_DEFAULT)) != CUDA_SUCCESS) {
        err = cuda_fail(NULL, r, TEMPER_EDEVICE, msg, msg_size, "cuEventCreate");
        goto fail;
    }
    cuda_fill_info(c, index);
    *ctx = c;
    return 0;
fail:
    if (c->timer_begin)
        cu.cuEventDestroy(c->timer_begin);
    cu.cuDevicePrimaryCtxRelease(c->dev);
    free(c);
    return err;
}

/* Frees c's cuBLASLt plan's descriptors (cuBLASLt is loaded when a plan exists). */
static void cuda_lt_plan_free(struct cuda_lt_plan *p)
{
    if (p->desc)
        lt.cublasLtMatmulDescDestroy(p->desc);
    if (p->a)
        lt.cublasLtMatrixLayoutDestroy(p->a);
    if (p->b)
        lt.cublasLtMatrixLayoutDestroy(p->b);
    if (p->d)
        lt.cublasLtMatrixLayoutDestroy(p->d);
    memset(p, 0, sizeof *p);
}

/* Frees what open made (ctx included). Buffers and modules should be released first; after a
 * kernel fault the driver calls here fail and are ignored, since the process is about to end. */
static void cuda_close(void *ctx)
{
    struct cuda_ctx *c = ctx;
    if (!c)
        return;
    cu.cuCtxSetCurrent(c->ctx);
    if (c->cublas)
        cb.cublasDestroy(c->cublas); /* waits for its work, before its workspace goes */
    if (c->cublas_workspace)
        cu.cuMemFree(c->cublas_workspace);
    if (c->cublaslt) {
        cu.cuCtxSynchronize(); /* cublasLtDestroy does not wait for queued matmuls using the workspace */
        cuda_lt_plan_free(&c->lt_plan);
        lt.cublasLtDestroy(c->cublaslt);
    }
    if (c->cublaslt_workspace)
        cu.cuMemFree(c->cublaslt_workspace);
    if (c->flush_ptr)
        cu.cuMemFree(c->flush_ptr);
    cu.cuEventDestroy(c->timer_begin);
    cu.cuEventDestroy(c->timer_end);
    cu.cuDevicePrimaryCtxRelease(c->dev);
    free(c);
}

/* Copies the device's description (filled at open) into *info, which the caller owns. */
static int cuda_info(void *ctx, struct temper_device_info *info)
{
    const struct cuda_ctx *c = ctx;
    *info = c->info;
    return 0;
}

/* ---- memory ---- */

/* Fails with the remembered fault when an earlier kernel killed the context. */
static int cuda_check_alive(struct cuda_ctx *c, char *msg, size_t msg_size)
{
    if (c->fault != CUDA_SUCCESS)
        return temper_fail(msg, msg_size, TEMPER_ELAUNCH, "%s (the context is unusable after this fault)",
                           c->fault_msg);
    return cuda_bind(c, msg, msg_size);
}

/* Checks that [offset, offset + bytes) lies in buf. */
static int cuda_check_range(const struct temper_dbuf *buf, size_t offset, size_t bytes, const char *what,
                            char *msg, size_t msg_size)
{
    if (!buf)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "%s: no buffer", what);
    if (offset > buf->size || bytes > buf->size - offset)
        return temper_fail(msg, msg_size, TEMPER_EINVALID,
                           "%s: bytes [%zu, %zu) lie outside the buffer of %zu bytes", what, offset,
                           offset + bytes, buf->size);
    return 0;
}

/* Allocates bytes of device memory (contents undefined). *buf is owned by the caller, who gives it
 * back with release. A request of 0 bytes gives a buffer with no memory behind it. */
static int cuda_alloc(void *ctx, size_t bytes, struct temper_dbuf **buf, char *msg, size_t msg_size)
{
    struct cuda_ctx *c = ctx;
    *buf = NULL;
    int err = cuda_check_alive(c, msg, msg_size);
    if (err)
        return err;
    struct temper_dbuf *b = calloc(1, sizeof *b);
    if (!b)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of host memory");
    if (bytes) {
        CUresult r = cu.cuMemAlloc(&b->ptr, bytes);
        if (r != CUDA_SUCCESS) {
            free(b);
            char what[64];
            snprintf(what, sizeof what, "cuMemAlloc(%zu bytes)", bytes);
            return cuda_fail(c, r, TEMPER_EDEVICE, msg, msg_size, what);
        }
        b->owns = 1;
    }
    b->size = bytes;
    *buf = b;
    return 0;
}

/* A view of [offset, offset + bytes) of parent (an allocation or a view). *view is owned by the
 * caller and released (before parent) with release; it owns no device memory. */
static int cuda_view(void *ctx, struct temper_dbuf *parent, size_t offset, size_t bytes, struct temper_dbuf **view,
                     char *msg, size_t msg_size)
{
    const struct cuda_ctx *c = ctx;
    *view = NULL;
    int err = cuda_check_range(parent, offset, bytes, "view", msg, msg_size);
    if (err)
        return err;
    if (offset % c->info.base_align_bytes)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "view: offset %zu is not a multiple of %zu bytes",
                           offset, c->info.base_align_bytes);
    struct temper_dbuf *v = calloc(1, sizeof *v);
    if (!v)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of host memory");
    v->ptr = parent->ptr + offset;
    v->size = bytes;
    v->owns = 0;
    *view = v;
    return 0;
}

/* Frees buf (device memory too, when it is an allocation); NULL is a no-op. */
static void cuda_release(void *ctx, struct temper_dbuf *buf)
{
    struct cuda_ctx *c = ctx;
    if (!buf)
        return;
    if (buf->owns && buf->ptr) {
        cu.cuCtxSetCurrent(c->ctx);
        cu.cuMemFree(buf->ptr);
    }
    free(buf);
}

/* Copies bytes from host src (borrowed) to buf at offset; ordered after earlier launches. */
static int cuda_write(void *ctx, struct temper_dbuf *buf, size_t offset, const void *src, size_t bytes, char *msg,
                      size_t msg_size)
{
    struct cuda_ctx *c = ctx;
    int err = cuda_check_range(buf, offset, bytes, "write", msg, msg_size);
    if (err || !bytes)
        return err;
    if ((err = cuda_check_alive(c, msg, msg_size)) != 0)
        return err;
    CUresult r = cu.cuMemcpyHtoD(buf->ptr + offset, src, bytes);
    return r == CUDA_SUCCESS ? 0 : cuda_fail(c, r, TEMPER_EDEVICE, msg, msg_size, "cuMemcpyHtoD");
}

/* Copies bytes of buf at offset into host dst (borrowed); waits for earlier work, so a fault of
 * an earlier kernel is reported here as TEMPER_ELAUNCH. */
static int cuda_read(void *ctx, struct temper_dbuf *buf, size_t offset, void *dst, size_t bytes, char *msg,
                     size_t msg_size)
{
    struct cuda_ctx *c = ctx;
    int err = cuda_check_range(buf, offset, bytes, "read", msg, msg_size);
    if (err || !bytes)
        return err;
    if ((err = cuda_check_alive(c, msg, msg_size)) != 0)
        return err;
    CUresult r = cu.cuMemcpyDtoH(dst, buf->ptr + offset, bytes);
    return r == CUDA_SUCCESS ? 0 : cuda_fail(c, r, TEMPER_EDEVICE, msg, msg_size, "cuMemcpyDtoH");
}

/* Fills [dst, dst + bytes) with the pattern where no memset call fits (8-byte patterns and
 * misaligned ranges): writes up to CUDA_FILL_STAGE_BYTES from the host, then doubles the filled
 * prefix with device-to-device copies. bytes is a multiple of size. */
static CUresult cuda_fill_staged(CUdeviceptr dst, size_t bytes, const unsigned char *pattern, size_t size)
{
    size_t first = bytes < CUDA_FILL_STAGE_BYTES ? bytes : CUDA_FILL_STAGE_BYTES - CUDA_FILL_STAGE_BYTES % size;
    unsigned char *stage = malloc(first);
    if (!stage)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < first; i += size)
        memcpy(stage + i, pattern, size);
    CUresult r = cu.cuMemcpyHtoD(dst, stage, first);
    free(stage);
    /* first is a multiple of size, so every copy keeps the phase of the pattern */
    for (size_t done = first; r == CUDA_SUCCESS && done < bytes;) {
        size_t n = done < bytes - done ? done : bytes - done;
        r = cu.cuMemcpyDtoD(dst + done, dst, n);
        done += n;
    }
    return r;
}

/* Fills bytes of buf at offset with a repeated pattern of pattern_size (1, 2, 4 or 8) bytes from
 * pattern (borrowed); bytes must be a multiple of pattern_size. Queued in order with launches. */
static int cuda_fill(void *ctx, struct temper_dbuf *buf, size_t offset, size_t bytes, const void *pattern,
                     size_t pattern_size, char *msg, size_t msg_size)
{
    struct cuda_ctx *c = ctx;
    int err = cuda_check_range(buf, offset, bytes, "fill", msg, msg_size);
    if (err)
        return err;
    if (pattern_size != 1 && pattern_size != 2 && pattern_size != 4 && pattern_size != 8)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "fill: pattern of %zu bytes (1, 2, 4 or 8 allowed)",
                           pattern_size);
    if (bytes % pattern_size)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "fill: %zu bytes is not a multiple of the %zu-byte pattern",
                           bytes, pattern_size);
    if (!bytes)
        return 0;
    if ((err = cuda_check_alive(c, msg, msg_size)) != 0)
        return err;
    CUdeviceptr dst = buf->ptr + offset;
    CUresult r;
    if (pattern_size == 1) {
        r = cu.cuMemsetD8(dst, *(const unsigned char *)pattern, bytes);
    } else if (pattern_size == 2 && dst % 2 == 0) {
        uint16_t v;
        memcpy(&v, pattern, 2);
        r = cu.cuMemsetD16(dst, v, bytes / 2);
    } else if (pattern_size == 4 && dst % 4 == 0) {
        uint32_t v;
        memcpy(&v, pattern, 4);
        r = cu.cuMemsetD32(dst, v, bytes / 4);
    } else if (pattern_size == 8 && dst % 4 == 0 && memcmp(pattern, (const char *)pattern + 4, 4) == 0) {
        uint32_t v;
        memcpy(&v, pattern, 4);
        r = cu.cuMemsetD32(dst, v, bytes / 4);
    } else {
        r = cuda_fill_staged(dst, bytes, pattern, pattern_size);
    }
    return r == CUDA_SUCCESS ? 0 : cuda_fail(c, r, TEMPER_EDEVICE, msg, msg_size, "fill");
}

/* ---- compiling and loading ---- */

/* Appends n bytes of text to log (may be NULL), truncating at the log's maximum. */
static void cuda_log_append(struct temper_buf *log, const char *text, size_t n)
{
    if (!log || !n)
        return;
    if (temper_buf_append(log, text, n) == 0)
        return;
    if (log->max_bytes > log->len + 1)
        temper_buf_append(log, text, log->max_bytes - log->len - 1);
}

/* Splits options on whitespace; a double-quoted stretch stays in one word, without its quotes.
 * Returns a malloc'ed array of *argc + 2 slots (room for the added architecture and include) pointing into
 * *storage, also malloc'ed; the caller frees both. NULL when out of memory. */
static char **cuda_split_options(const char *options, int *argc, char **storage)
{
    size_t len = options ? strlen(options) : 0;
    char *s = malloc(len + 1);
    char **argv = malloc((len / 2 + 4) * sizeof *argv); /* one word per two chars at most, plus 2 */
    if (!s || !argv) {
        free(s);
        free(argv);
        return NULL;
    }
    int n = 0;
    size_t i = 0, o = 0;
    while (i < len) {
        while (i < len && (options[i] == ' ' || options[i] == '\t' || options[i] == '\n' || options[i] == '\r'))
            i++;
        if (i >= len)
            break;
        argv[n++] = s + o;
        int quoted = 0;
        while (i < len) {
            char ch = options[i];
            if (ch == '"') {
                quoted = !quoted;
                i++;
                continue;
            }
            if (!quoted && (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r'))
                break;
            s[o++] = ch;
            i++;
        }
        s[o++] = '\0';
    }
    *argc = n;
    *storage = s;
    return argv;
}

/* The architecture an option names ("sm_90a" from "-arch=sm_90a" or "--gpu-architecture=sm_90a"),
 * "" for "-arch" with the value in the next word, or NULL when the option names none. */
static const char *cuda_option_arch(const char *opt)
{
    static const char *const prefixes[] = {"--gpu-architecture", "-arch", NULL};
    for (int i = 0; prefixes[i]; i++) {
        size_t n = strlen(prefixes[i]);
        if (strncmp(opt, prefixes[i], n) == 0 && (opt[n] == '=' || opt[n] == '\0'))
            return opt[n] == '=' ? opt + n + 1 : "";
    }
    return NULL;
}

/* Compiles CUDA C++ source with NVRTC, without a device context. options are split on whitespace
 * (double quotes group) and "--gpu-architecture=<info->arch>" is added unless they name an
 * architecture (info may be NULL: NVRTC's default then), and -I with the toolkit's include
 * folder where one was found, so that cuda_fp16.h and cuda_bf16.h can be included. The result is CUBIN for a real sm_
 * architecture, else NUL-terminated PTX; *binary is malloc'ed and the caller frees it. The
 * compiler's log is appended to log (may be NULL) in every case. */
static int cuda_compile(const struct temper_device_info *info, const char *source, const char *options,
                        struct temper_buf *log, void **binary, size_t *binary_size, char *msg, size_t msg_size)
{
    *binary = NULL;
    *binary_size = 0;
    int err = cuda_load_nvrtc(msg, msg_size);
    if (err)
        return err;
    int argc = 0;
    char *storage = NULL;
    char **argv = cuda_split_options(options, &argc, &storage);
    if (!argv)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory splitting compiler options");
    const char *arch = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = cuda_option_arch(argv[i]);
        if (a)
            arch = *a || i + 1 >= argc ? a : argv[i + 1];
    }
    char arch_opt[64];
    if (!arch && info && info->arch[0]) {
        snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%s", info->arch);
        argv[argc++] = arch_opt;
        arch = info->arch;
    }
    char include_opt[PATH_MAX + 4];
    if (cuda_include_dir[0]) { /* after the caller's -I options, so theirs are searched first */
        snprintf(include_opt, sizeof include_opt, "-I%s", cuda_include_dir);
        argv[argc++] = include_opt;
    }
    int want_cubin = arch && strncmp(arch, "sm_", 3) == 0;

    nvrtcProgram prog = NULL;
    nvrtcResult r = nv.nvrtcCreateProgram(&prog, source, "candidate.cu", 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) {
        err = temper_fail(msg, msg_size, TEMPER_ECOMPILE, "nvrtcCreateProgram: %s", nv.nvrtcGetErrorString(r));
        goto done;
    }
    nvrtcResult cr = nv.nvrtcCompileProgram(prog, argc, (const char *const *)argv);
    size_t log_size = 0;
    if (nv.nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
        char *text = malloc(log_size);
        if (text && nv.nvrtcGetProgramLog(prog, text) == NVRTC_SUCCESS)
            cuda_log_append(log, text, strnlen(text, log_size));
        free(text);
    }
    if (cr != NVRTC_SUCCESS) {
        if (cr == NVRTC_ERROR_COMPILATION) {
            err = temper_fail(msg, msg_size, TEMPER_ECOMPILE, "NVRTC compilation failed");
        } else {
            /* e.g. an unknown option: say so in the log too, which may otherwise be empty */
            char line[256];
            int n = snprintf(line, sizeof line, "nvrtcCompileProgram: %s\n", nv.nvrtcGetErrorString(cr));
            cuda_log_append(log, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
            err = temper_fail(msg, msg_size, TEMPER_ECOMPILE, "NVRTC compilation failed: %s",
                              nv.nvrtcGetErrorString(cr));
        }
        goto done;
    }
    size_t size = 0;
    r = want_cubin ? nv.nvrtcGetCUBINSize(prog, &size) : nv.nvrtcGetPTXSize(prog, &size);
    if (r != NVRTC_SUCCESS || size == 0) {
        err = temper_fail(msg, msg_size, TEMPER_ECOMPILE, "NVRTC produced no %s: %s", want_cubin ? "CUBIN" : "PTX",
                          nv.nvrtcGetErrorString(r));
        goto done;
    }
    char *out = malloc(size);
    if (!out) {
        err = temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory for a %zu-byte binary", size);
        goto done;
    }
    r = want_cubin ? nv.nvrtcGetCUBIN(prog, out) : nv.nvrtcGetPTX(prog, out);
    if (r != NVRTC_SUCCESS) {
        free(out);
        err = temper_fail(msg, msg_size, TEMPER_ECOMPILE, "NVRTC: %s", nv.nvrtcGetErrorString(r));
        goto done;
    }
    *binary = out;
    *binary_size = size;
done:
    if (prog)
        nv.nvrtcDestroyProgram(&prog);
    free(argv);
    free(storage);
    return err;
}

/* Loads a CUBIN or PTX made by compile (data borrowed). *mod is owned by the caller, who frees it
 * with module_free. A binary the device cannot run (another architecture) is TEMPER_ECOMPILE. */
static int cuda_load(void *ctx, const void *data, size_t size, struct temper_dmodule **mod, char *msg,
                     size_t msg_size)
{
    struct cuda_ctx *c = ctx;
    *mod = NULL;
    if (!data || !size)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "load: empty binary");
    int err = cuda_check_alive(c, msg, msg_size);
    if (err)
        return err;
    const unsigned char *bytes = data;
    char *ptx = NULL;
    int is_elf = size >= 4 && bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' && bytes[3] == 'F';
    if (!is_elf && bytes[size - 1] != '\0') { /* PTX must be NUL-terminated */
        if (!(ptx = malloc(size + 1)))
            return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory loading PTX");
        memcpy(ptx, data, size);
        ptx[size] = '\0';
    }
    struct temper_dmodule *m = calloc(1, sizeof *m);
    if (!m) {
        free(ptx);
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of host memory");
    }
    CUresult r = cu.cuModuleLoadData(&m->mod, ptx ? (const void *)ptx : data);
    free(ptx);
    if (r != CUDA_SUCCESS) {
        free(m);
        return cuda_fail(c, r, TEMPER_ECOMPILE, msg, msg_size, "cuModuleLoadData");
    }
    *mod = m;
    return 0;
}

/* Unloads mod and frees it with its kernels; NULL is a no-op. */
static void cuda_module_free(void *ctx, struct temper_dmodule *mod)
{
    struct cuda_ctx *c = ctx;
    if (!mod)
        return;
    for (struct temper_dkernel *k = mod->kernels, *next; k; k = next) {
        next = k->next;
        free(k);
    }
    cu.cuCtxSetCurrent(c->ctx);
    cu.cuModuleUnload(mod->mod);
    free(mod);
}

/* Looks up the kernel name (borrowed) in mod. *kernel is borrowed from mod and freed with it;
 * looking the same name up again gives the same kernel. */
static int cuda_kernel(void *ctx, struct temper_dmodule *mod, const char *name, struct temper_dkernel **kernel,
                       char *msg, size_t msg_size)
{
    struct cuda_ctx *c = ctx;
    *kernel = NULL;
    for (struct temper_dkernel *k = mod->kernels; k; k = k->next) {
        if (strcmp(k->name, name) == 0) {
            *kernel = k;
            return 0;
        }
    }
    int err = cuda_check_alive(c, msg, msg_size);
    if (err)
        return err;
    CUfunction fn = NULL;
    CUresult r = cu.cuModuleGetFunction(&fn, mod->mod, name);
    if (r == CUDA_ERROR_NOT_FOUND)
        return temper_fail(msg, msg_size, TEMPER_ENOTFOUND,
                           "kernel '%s' not found in the module (is it declared extern \"C\" __global__?)", name);
    if (r != CUDA_SUCCESS) {
        char what[300];
        snprintf(what, sizeof what, "cuModuleGetFunction(%s)", name);
        return cuda_fail(c, r, TEMPER_EDEVICE, msg, msg_size, what);
    }
    size_t n = strlen(name);
    struct temper_dkernel *k = calloc(1, sizeof *k + n + 1);
    if (!k)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of host memory");
    k->fn = fn;
    memcpy(k->name, name, n + 1);
    k->next = mod->kernels;
    mod->kernels = k;
    *kernel = k;
    return 0;
}

/* ---- launching, waiting, timing ---- */

/* Queues one launch of kernel on the default stream; args and dims are borrowed (the driver copies
 * the argument values before returning). A grid with a zero dimension has no blocks and queues
 * nothing. Dynamic shared memory above 48 KiB is opted into first. */
static int cuda_launch(void *ctx, struct temper_dkernel *kernel, const struct temper_launch_dims *dims, int nargs,
                       const struct temper_karg *args, char *msg, size_t msg_size)
{
    struct cuda_ctx *c = ctx;
    if (nargs < 0 || nargs > CUDA_MAX_KARGS)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "launch %s: %d arguments (at most %d)", kernel->name,
                           nargs, CUDA_MAX_KARGS);
    for (int d = 0; d < 3; d++) {
        if (dims->block[d] == 0 || dims->block[d] > UINT_MAX || dims->grid[d] > UINT_MAX)
            return temper_fail(msg, msg_size, TEMPER_ELAUNCH,
                               "launch %s: grid (%zu, %zu, %zu) block (%zu, %zu, %zu) is out of range", kernel->name,
                               dims->grid[0], dims->grid[1], dims->grid[2], dims->block[0], dims->block[1],
                               dims->block[2]);
    }
    /* The limits every CUDA device since compute capability 3.0 has; the driver would only say
     * "invalid argument". */
    static const size_t grid_max[3] = {2147483647u, 65535u, 65535u}, block_max[3] = {1024u, 1024u, 64u};
    int over = dims->block[0] * dims->block[1] * dims->block[2] > 1024u;
    for (int d = 0; d < 3; d++)
        over |= dims->grid[d] > grid_max[d] || dims->block[d] > block_max[d];
    if (over)
        return temper_fail(msg, msg_size, TEMPER_ELAUNCH,
                           "launch %s: grid (%zu, %zu, %zu) block (%zu, %zu, %zu) exceeds CUDA's limits: grid "
                           "(2147483647, 65535, 65535), block (1024, 1024, 64), 1024 threads per block",
                           kernel->name, dims->grid[0], dims->grid[1], dims->grid[2], dims->block[0], dims->block[1],
                           dims->block[2]);
    if (dims->smem_bytes > UINT_MAX)
        return temper_fail(msg, msg_size, TEMPER_ELAUNCH, "launch %s: %zu bytes of shared memory", kernel->name,
                           dims->smem_bytes);
    int err = cuda_check_alive(c, msg, msg_size);
    if (err)
        return err;
    if (dims->grid[0] == 0 || dims->grid[1] == 0 || dims->grid[2] == 0)
        return 0;
    if (dims->smem_bytes > CUDA_SMEM_DEFAULT_BYTES && dims->smem_bytes > kernel->smem_optin_bytes) {
        if (dims->smem_bytes > c->info.local_mem_optin_bytes)
            return temper_fail(msg, msg_size, TEMPER_ELAUNCH,
                               "launch %s: %zu bytes of dynamic shared memory exceed the device's limit of %llu "
                               "bytes per block",
                               kernel->name, dims->smem_bytes, (unsigned long long)c->info.local_mem_optin_bytes);
        CUresult r =
            cu.cuFuncSetAttribute(kernel->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)dims->smem_bytes);
        if (r != CUDA_SUCCESS) {
            char what[320];
            snprintf(what, sizeof what, "launch %s: opting into %zu bytes of dynamic shared memory (with the "
                     "kernel's static shared memory it may exceed the device's %llu)", kernel->name,
                     dims->smem_bytes, (unsigned long long)c->info.local_mem_optin_bytes);
            return cuda_fail(c, r, TEMPER_ELAUNCH, msg, msg_size, what);
        }
        kernel->smem_optin_bytes = dims->smem_bytes;
    }
    CUdeviceptr ptrs[CUDA_MAX_KARGS];
    void *params[CUDA_MAX_KARGS];
    for (int i = 0; i < nargs; i++) {
        switch (args[i].kind) {
        case TEMPER_KARG_BUFFER:
            if (!args[i].v.buf)
                return temper_fail(msg, msg_size, TEMPER_EINVALID, "launch %s: argument %d has no buffer",
                                   kernel->name, i);
            ptrs[i] = args[i].v.buf->ptr;
            params[i] = &ptrs[i];
            break;
        case TEMPER_KARG_I32:
            params[i] = (void *)&args[i].v.i32;
            break;
        case TEMPER_KARG_I64:
            params[i] = (void *)&args[i].v.i64;
            break;
        case TEMPER_KARG_F32:
            params[i] = (void *)&args[i].v.f32;
            break;
        default:
            return temper_fail(msg, msg_size, TEMPER_EINVALID, "launch %s: argument %d has unknown kind %d",
                               kernel->name, i, (int)args[i].kind);
        }
    }
    CUresult r = cu.cuLaunchKernel(kernel->fn, (unsigned)dims->grid[0], (unsigned)dims->grid[1],
                                   (unsigned)dims->grid[2], (unsigned)dims->block[0], (unsigned)dims->block[1],
                                   (unsigned)dims->block[2], (unsigned)dims->smem_bytes, NULL,
                                   nargs ? params : NULL, NULL);
    if (r != CUDA_SUCCESS) {
        char what[400];
        snprintf(what, sizeof what, "launch %s grid (%zu, %zu, %zu) block (%zu, %zu, %zu) smem %zu", kernel->name,
                 dims->grid[0], dims->grid[1], dims->grid[2], dims->block[0], dims->block[1], dims->block[2],
                 dims->smem_bytes);
        return cuda_fail(c, r, TEMPER_ELAUNCH, msg, msg_size, what);
    }
    return 0;
}

/* Waits for everything queued. A fault of a kernel (illegal address, __trap(), ...) comes back as
 * TEMPER_ELAUNCH with "CUDA_ERROR_X: text" in msg; the context is then unusable. */
static int cuda_sync(void *ctx, char *msg, size_t msg_size)
{
    struct cuda_ctx *c = ctx;
    int err = cuda_check_alive(c, msg, msg_size);
    if (err)
        return err;
    CUresult r = cu.cuCtxSynchronize();
    return r == CUDA_SUCCESS ? 0 : cuda_fail(c, r, TEMPER_ELAUNCH, msg, msg_size, "cuCtxSynchronize");
}

/* Records the start event on the default stream, behind everything queued so far. */
static int cuda_timer_start(void *ctx, char *msg, size_t msg_size)
{
    struct cuda_ctx *c = ctx;
    int err = cuda_check_alive(c, msg, msg_size);
    if (err)
        return err;
    CUresult r = cu.cuEventRecord(c->timer_begin, NULL);
    if (r != CUDA_SUCCESS)
        return cuda_fail(c, r, TEMPER_EDEVICE, msg, msg_size, "cuEventRecord");
    c->timer_running = 1;
    return 0;
}

/* Records the end event, waits for it and gives the device time since timer_start in ms. */
static int cuda_timer_stop(void *ctx, double *elapsed_ms, char *msg, size_t msg_size)
{
    struct cuda_ctx *c = ctx;
    *elapsed_ms = 0;
    if (!c->timer_running)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "timer_stop without timer_start");
    c->timer_running = 0;
    int err = cuda_check_alive(c, msg, msg_size);
    if (err)
        return err;
    CUresult r = cu.cuEventRecord(c->timer_end, NULL);
    if (r != CUDA_SUCCESS)
        return cuda_fail(c, r, TEMPER_EDEVICE, msg, msg_size, "cuEventRecord");
    r = cu.cuEventSynchronize(c->timer_end);
    if (r != CUDA_SUCCESS)
        return cuda_fail(c, r, TEMPER_ELAUNCH, msg, msg_size, "cuEventSynchronize");
    float ms = 0;
    r = cu.cuEventElapsedTime(&ms, c->timer_begin, c->timer_end);
    if (r != CUDA_SUCCESS)
        return cuda_fail(c, r, TEMPER_EDEVICE, msg, msg_size, "cuEventElapsedTime");
    *elapsed_ms = ms;
    return 0;
}

/* Evicts L2 by writing a scratch buffer of twice its size (allocated on first use, freed at
 * close) with a value that changes every call. Queued, not waited for; call it outside the
 * timed region. */
static int cuda_flush_cache(void *ctx, char *msg, size_t msg_size)
{
    struct cuda_ctx *c = ctx;
    int err = cuda_check_alive(c, msg, msg_size);
    if (err)
        return err;
    if (!c->flush_ptr) {
        size_t bytes = c->info.cache_bytes ? (size_t)c->info.cache_bytes * 2 : CUDA_FLUSH_FALLBACK_BYTES;
        bytes = (bytes + 3) & ~(size_t)3;
        CUresult r = cu.cuMemAlloc(&c->flush_ptr, bytes);
        if (r != CUDA_SUCCESS) {
            c->flush_ptr = 0;
            return cuda_fail(c, r, TEMPER_EDEVICE, msg, msg_size, "allocating the cache-flush buffer");
        }
        c->flush_bytes = bytes;
    }
    CUresult r = cu.cuMemsetD32(c->flush_ptr, ++c->flush_value, c->flush_bytes / 4);
    return r == CUDA_SUCCESS ? 0 : cuda_fail(c, r, TEMPER_EDEVICE, msg, msg_size, "flushing the cache");
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
    return cuda_blas_fail(s, cb.cublasGetStatusString, msg, msg_size, what);
}

static int cuda_cublaslt_fail(cublasStatus_t s, char *msg, size_t msg_size, const char *what)
{
    return cuda_blas_fail(s, lt.cublasLtGetStatusString, msg, msg_size, what);
}

/* Makes c's cuBLAS handle on first use (c's context is current): on the legacy default stream
 * like every other call here, with plain fp32 math (no TF32 unless a call asks for it) and a
 * workspace of its own, so that no later call allocates. */
static int cuda_cublas_handle(struct cuda_ctx *c, char *msg, size_t msg_size)
{
    if (c->cublas)
        return 0;
    cublasHandle_t h = NULL;
    cublasStatus_t s = cb.cublasCreate(&h);
    if (s != CUBLAS_STATUS_SUCCESS)
        return cuda_cublas_fail(s, msg, msg_size, "cublasCreate_v2");
    /* the stream first: setting it resets the workspace to cuBLAS's own pool */
    if ((s = cb.cublasSetStream(h, NULL)) != CUBLAS_STATUS_SUCCESS) {
        cb.cublasDestroy(h);
        return cuda_cublas_fail(s, msg, msg_size, "cublasSetStream_v2");
    }
    if ((s = cb.cublasSetMathMode(h, CUBLAS_DEFAULT_MATH)) != CUBLAS_STATUS_SUCCESS) {
        cb.cublasDestroy(h);
        return cuda_cublas_fail(s, msg, msg_size, "cublasSetMathMode");
    }
    if (cb.cublasSetWorkspace) {
        CUdeviceptr ws = 0;
        CUresult r = cu.cuMemAlloc(&ws, CUDA_CUBLAS_WORKSPACE_BYTES);
        if (r != CUDA_SUCCESS) {
            cb.cublasDestroy(h);
            return cuda_fail(c, r, TEMPER_EDEVICE, msg, msg_size, "allocating cuBLAS's workspace");
        }
        s = cb.cublasSetWorkspace(h, (void *)(uintptr_t)ws, CUDA_CUBLAS_WORKSPACE_BYTES);
        if (s != CUBLAS_STATUS_SUCCESS) {
            cb.cublasDestroy(h);
            cu.cuMemFree(ws);
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
    cublasStatus_t s = lt.cublasLtCreate(&h);
    if (s != CUBLAS_STATUS_SUCCESS)
        return cuda_cublaslt_fail(s, msg, msg_size, "cublasLtCreate");
    CUdeviceptr ws = 0;
    CUresult r = cu.cuMemAlloc(&ws, CUDA_CUBLASLT_WORKSPACE_BYTES);
    if (r != CUDA_SUCCESS) {
        lt.cublasLtDestroy(h);
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
    cublasStatus_t s = lt.cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    const uint32_t epilogue = CUBLASLT_EPILOGUE_GELU_BIAS;
    const int32_t bias_type = CUDA_R_16BF;
    const void *bias_ptr = (const void *)(uintptr_t)bias;
    if (s == CUBLAS_STATUS_SUCCESS) {
        what = "cublasLtMatmulDescSetAttribute (epilogue GELU_BIAS)";
        s = lt.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue);
    }
    if (s == CUBLAS_STATUS_SUCCESS) {
        what = "cublasLtMatmulDescSetAttribute (bias data type bf16)";
        s = lt.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                              sizeof bias_type);
    }
    if (s == CUBLAS_STATUS_SUCCESS) { /* the heuristic reads the bias pointer's alignment */
        what = "cublasLtMatmulDescSetAttribute (bias pointer)";
        s = lt.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr,
                                              sizeof bias_ptr);
    }
    if (s == CUBLAS_STATUS_SUCCESS) {
        what = "cublasLtMatrixLayoutCreate";
        s = lt.cublasLtMatrixLayoutCreate(&p->a, CUDA_R_16BF, (uint64_t)n, (uint64_t)k, n);
    }
    if (s == CUBLAS_STATUS_SUCCESS)
        s = lt.cublasLtMatrixLayoutCreate(&p->b, CUDA_R_16BF, (uint64_t)k, (uint64_t)m, k);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = lt.cublasLtMatrixLayoutCreate(&p->d, CUDA_R_16BF, (uint64_t)n, (uint64_t)m, n);
    if (s == CUBLAS_STATUS_SUCCESS) {
        what = "cublasLtMatmulPreferenceCreate";
        s = lt.cublasLtMatmulPreferenceCreate(&pref);
    }
    const uint64_t ws_bytes = CUDA_CUBLASLT_WORKSPACE_BYTES;
    if (s == CUBLAS_STATUS_SUCCESS) {
        what = "cublasLtMatmulPreferenceSetAttribute";
        s = lt.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                                    sizeof ws_bytes);
    }
    /* A is W, B is X, C and D are Y */
    const int align_attr[4] = {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                               CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    const uint32_t align_val[4] = {align[1], align[0], align[2], align[2]};
    for (int i = 0; i < 4 && s == CUBLAS_STATUS_SUCCESS; i++)
        s = lt.cublasLtMatmulPreferenceSetAttribute(pref, align_attr[i], &align_val[i], sizeof align_val[i]);
    cublasLtMatmulHeuristicResult_t result;
    memset(&result, 0, sizeof result);
    int found = 0;
    if (s == CUBLAS_STATUS_SUCCESS) {
        what = "cublasLtMatmulAlgoGetHeuristic";
        s = lt.cublasLtMatmulAlgoGetHeuristic(c->cublaslt, p->desc, p->a, p->b, p->d, p->d, pref, 1, &result,
                                              &found);
        if (s == CUBLAS_STATUS_SUCCESS && found < 1)
            s = CUBLAS_STATUS_NOT_SUPPORTED; /* no algorithm for this problem */
        else if (s == CUBLAS_STATUS_SUCCESS)
            s = result.state;
    }
    if (pref)
        lt.cublasLtMatmulPreferenceDestroy(pref);
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
static int cuda_expert(void *ctx, const char *routine, int nbufs, struct temper_dbuf *const *bufs, int nscalars,
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
        cublasStatus_t s = lt.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr,
                                                             sizeof bias_ptr);
        const char *what = "cublasLtMatmulDescSetAttribute (bias pointer)";
        if (s == CUBLAS_STATUS_SUCCESS) {
            what = "cublasLtMatmul (bf16, fp32 compute, GELU_BIAS epilogue)";
            s = lt.cublasLtMatmul(c->cublaslt, p->desc, &one, (const void *)(uintptr_t)w, p->a,
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
        s = cb.cublasSgemm(c->cublas, CUBLAS_OP_N, CUBLAS_OP_N, in, im, ik, &one, b, ldb, a, lda, &zero, cc, ldc);
        break;
    case CUDA_EXPERT_GEMM_BF16:
        what = "cublasGemmEx (bf16, fp32 compute)";
        s = cb.cublasGemmEx(c->cublas, CUBLAS_OP_N, CUBLAS_OP_N, in, im, ik, &one, b, CUDA_R_16BF, ldb, a,
                            CUDA_R_16BF, lda, &zero, cc, CUDA_R_16BF, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        break;
    case CUDA_EXPERT_GEMV_BF16:
        /* W row-major [N,K] is column-major K x N with ld K; y (N x 1) = W^T x (K x 1) */
        what = "cublasGemmEx (bf16 GEMV, fp32 compute)";
        s = cb.cublasGemmEx(c->cublas, CUBLAS_OP_T, CUBLAS_OP_N, im, 1, ik, &one, a, CUDA_R_16BF, lda, b,
                            CUDA_R_16BF, lda, &zero, cc, CUDA_R_16BF, im, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        break;
    case CUDA_EXPERT_GEMM_TF32:
    default:
        what = "cublasGemmEx (fp32, TF32 compute)";
        s = cb.cublasGemmEx(c->cublas, CUBLAS_OP_N, CUBLAS_OP_N, in, im, ik, &one, b, CUDA_R_32F, ldb, a,
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

const struct temper_device_ops temper_cuda_ops = {
    .version = TEMPER_DEVICE_OPS_VERSION,
    .name = "cuda",
    .count = cuda_count,
    .open = cuda_open,
    .close = cuda_close,
    .info = cuda_info,
    .alloc = cuda_alloc,
    .view = cuda_view,
    .release = cuda_release,
    .write = cuda_write,
    .read = cuda_read,
    .fill = cuda_fill,
    .compile = cuda_compile,
    .build = NULL,
    .binary = NULL,
    .load = cuda_load,
    .module_free = cuda_module_free,
    .kernel = cuda_kernel,
    .launch = cuda_launch,
    .sync = cuda_sync,
    .timer_start = cuda_timer_start,
    .timer_stop = cuda_timer_stop,
    .flush_cache = cuda_flush_cache,
    .expert = cuda_expert,
};
