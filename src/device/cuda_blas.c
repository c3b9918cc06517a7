/* cuda_blas.c: cuBLAS and cuBLASLt for the CUDA backend's experts: the libraries opened with
 * dlopen at first use, their status texts, and the handles and workspaces made on a context. */
#include "cuda_blas.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cuda_cublas_api cuda_cb;
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
int cuda_load_cublas(char *msg, size_t msg_size)
{
    pthread_once(&cuda_cublas_lib.once, cuda_load_cublas_once);
    if (cuda_cublas_lib.err)
        return temper_fail(msg, msg_size, TEMPER_EUNSUPPORTED, "%s", cuda_cublas_lib.msg);
    return 0;
}

struct cuda_cublaslt_api cuda_lt;
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
int cuda_load_cublaslt(char *msg, size_t msg_size)
{
    pthread_once(&cuda_cublaslt_lib.once, cuda_load_cublaslt_once);
    if (cuda_cublaslt_lib.err)
        return temper_fail(msg, msg_size, TEMPER_EUNSUPPORTED, "%s", cuda_cublaslt_lib.msg);
    return 0;
}

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

int cuda_cublas_fail(cublasStatus_t s, char *msg, size_t msg_size, const char *what)
{
    return cuda_blas_fail(s, cuda_cb.cublasGetStatusString, msg, msg_size, what);
}

int cuda_cublaslt_fail(cublasStatus_t s, char *msg, size_t msg_size, const char *what)
{
    return cuda_blas_fail(s, cuda_lt.cublasLtGetStatusString, msg, msg_size, what);
}

const char *cuda_expert_pick_name(enum cuda_expert_pick pick)
{
    return pick == CUDA_PICK_FIRST ? "first" : pick == CUDA_PICK_CUBLAS ? "cublas" : "fastest";
}

int cuda_expert_opts_parse(const char *pick, const char *lt_workspace_kib, struct cuda_expert_opts *o, char *msg,
                           size_t msg_size)
{
    const unsigned long long max_kib = CUDA_CUBLASLT_WORKSPACE_BYTES / 1024;
    o->pick = CUDA_PICK_FASTEST;
    o->lt_workspace_bytes = CUDA_CUBLASLT_WORKSPACE_BYTES;
    if (pick && *pick) {
        if (strcmp(pick, "first") == 0)
            o->pick = CUDA_PICK_FIRST;
        else if (strcmp(pick, "cublas") == 0)
            o->pick = CUDA_PICK_CUBLAS;
        else if (strcmp(pick, "fastest") != 0)
            return temper_fail(msg, msg_size, TEMPER_EINVALID,
                               "TEMPER_EXPERT_PICK='%s': expected fastest (the default), first or cublas", pick);
    }
    if (lt_workspace_kib && *lt_workspace_kib) {
        char *end = NULL;
        errno = 0;
        unsigned long long kib = isdigit((unsigned char)lt_workspace_kib[0]) ? strtoull(lt_workspace_kib, &end, 10) : 0;
        if (!end || *end || errno || kib > max_kib)
            return temper_fail(msg, msg_size, TEMPER_EINVALID,
                               "TEMPER_EXPERT_LT_WORKSPACE_KIB='%s': expected a whole number of KiB from 0 to %llu "
                               "(the workspace allocated)",
                               lt_workspace_kib, max_kib);
        o->lt_workspace_bytes = (size_t)kib * 1024;
    }
    return 0;
}

/* Makes c's cuBLAS handle on first use (c's context is current): on the legacy default stream
 * like every other call here, with plain fp32 math (no TF32 unless a call asks for it) and a
 * workspace of its own, so that no later call allocates. */
int cuda_cublas_handle(struct cuda_ctx *c, char *msg, size_t msg_size)
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
int cuda_cublaslt_handle(struct cuda_ctx *c, char *msg, size_t msg_size)
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

