/* cuda_impl.h: what the files of the CUDA backend share: the slice of cuda.h, nvrtc.h, cublas_api.h and
 * cublasLt.h they use (declared here, since no CUDA header is included), the entry points
 * resolved with dlsym, the context and its objects, and the functions one file gives the others.
 * Files: cuda_driver.c (loading the libraries, errors) is called by cuda_nvrtc.c (NVRTC),
 * cuda_expert.c (cuBLAS experts) and cuda.c (devices, memory, launches, the ops table); cuda.c
 * also calls the other two. No file calls back up that order. Internal to src/device. */
#ifndef TEMPER_CUDA_IMPL_H
#define TEMPER_CUDA_IMPL_H

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "device/device.h"

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
    CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
    CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13,
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36,
    CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37,
    CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};

enum {
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
    CU_EVENT_DEFAULT = 0,
    NVRTC_SUCCESS = 0,
    NVRTC_ERROR_COMPILATION = 6,
};

/* A TMA tensor map, as cuda.h declares CUtensorMap: 128 opaque bytes, 64-byte aligned. */
typedef struct {
    _Alignas(64) uint64_t opaque[16]; /* encoded by cuTensorMapEncodeTiled */
} CUtensorMap;

/* cuda.h's values for what temper's tensor maps use. */
enum {
    CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0,
    CU_TENSOR_MAP_DATA_TYPE_INT32 = 3,
    CU_TENSOR_MAP_DATA_TYPE_INT64 = 5,
    CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6,
    CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7,
    CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9,
    CU_TENSOR_MAP_INTERLEAVE_NONE = 0,
    CU_TENSOR_MAP_SWIZZLE_NONE = 0, /* then 32B, 64B, 128B in order */
    CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3,
    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0, /* out-of-bounds elements read as zeros */
};

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
    CUresult (*cuDeviceGetUuid)(unsigned char uuid[16], CUdevice dev); /* a CUuuid is 16 bytes */
    CUresult (*cuDeviceGetPCIBusId)(char *id, int len, CUdevice dev);
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
    /* optional (drivers of CUDA 12 and later): NULL when the driver lacks it */
    CUresult (*cuTensorMapEncodeTiled)(CUtensorMap *map, int dtype, unsigned rank, void *address, const uint64_t *dims,
                                       const uint64_t *strides, const uint32_t *box, const uint32_t *element_strides,
                                       int interleave, int swizzle, int l2_promotion, int oob_fill);
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

/* ---- the slice of cublas_api.h and cublasLt.h that the context holds ---- */

typedef int cublasStatus_t;
typedef struct cublasContext *cublasHandle_t;
typedef struct cublasLtContext *cublasLtHandle_t;
typedef struct cuda_lt_desc_opaque *cublasLtMatmulDesc_t;         /* cublasLtMatmulDescOpaque_t * */
typedef struct cuda_lt_layout_opaque *cublasLtMatrixLayout_t;     /* cublasLtMatrixLayoutOpaque_t * */
typedef struct cuda_lt_pref_opaque *cublasLtMatmulPreference_t;   /* cublasLtMatmulPreferenceOpaque_t * */

/* Semi-opaque, passed by value: the layouts must match cublasLt.h exactly. */
typedef struct {
    uint64_t data[8];
} cublasLtMatmulAlgo_t;

/* ---- the context and its objects ---- */

/* An opened device: its primary context, retained until close. */
/* One encoded tensor map and what it was encoded from (the map with its buffer pointer replaced
 * by the device address, zero-padded so that memcmp compares keys). */
#define CUDA_TMAP_CACHE 8
struct cuda_tmap_entry {
    struct temper_tensormap key; /* what was asked; key.buf is NULL, the address is in ptr */
    CUdeviceptr ptr;             /* the tensor's device address */
    int used;                    /* 1 once filled */
    uint64_t map[16];            /* the encoded map's bytes (unaligned here: copied out) */
};

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
    struct cuda_lt_cache *lt_cache; /* the GEMM plans chosen so far, per routine, shape and alignments
                                     * (cuda_expert.c); NULL until the first expert call */
    CUresult fault;                /* the first kernel fault seen, CUDA_SUCCESS while none */
    char fault_msg[256];           /* its text, repeated by every later failing call */
    struct cuda_tmap_entry tmaps[CUDA_TMAP_CACHE]; /* tensor maps encoded lately, so that a timed
                                                    * launch does not encode again */
    int tmap_next;                 /* the entry the next new map replaces */
};

/* A device allocation or a view of one. A view owns nothing and must be released before the
 * allocation it looks into. */
struct temper_dbuf {
    CUdeviceptr ptr; /* first byte */
    size_t size;     /* bytes */
    int owns;        /* 1 for an allocation (freed on release), 0 for a view */
};

/* One kernel of a Triton container (cuda_triton.c): its cubin's module and what launching it
 * needs, from Triton's metadata. */
struct cuda_triton_kernel {
    char kernel[128];              /* the @triton.jit function's name (what a launch line names) */
    char symbol[128];              /* the kernel's name in the cubin */
    CUmodule mod;                  /* its cubin, loaded */
    int num_warps;                 /* the block is 32 * num_warps threads */
    size_t shared;                 /* dynamic shared memory, bytes */
    size_t scratch_size[2];        /* global and profile scratch per block, bytes (0: none, NULL passed) */
    size_t scratch_align[2];       /* their alignment */
};

/* A kernel; owned by its module, which frees it. */
struct temper_dkernel {
    CUfunction fn;                /* the driver's handle */
    size_t smem_optin_bytes;      /* dynamic shared memory opted into so far */
    const struct cuda_triton_kernel *triton; /* a Triton kernel's metadata (borrowed), else NULL */
    CUdeviceptr scratch[2];       /* a Triton kernel's global and profile scratch, 0 while none */
    size_t scratch_bytes[2];      /* their sizes */
    struct temper_dkernel *next;  /* the module's next kernel */
    char name[];                  /* the kernel's name */
};

/* A loaded module and the kernels looked up in it. */
struct temper_dmodule {
    CUmodule mod;                   /* the driver's handle (NULL for a Triton container) */
    struct temper_dkernel *kernels; /* freed with the module */
    int ntriton;                    /* a Triton container's kernels, 0 otherwise */
    struct cuda_triton_kernel *triton; /* their entries (owned) */
};

/* ---- cuda_triton.c ---- */

/* Whether a binary is temper's Triton container ("TEMPER-TRITON 1" and a header line). */
int cuda_triton_is_container(const void *data, size_t size);
/* Loads every cubin of a Triton container into m (its triton entries); TEMPER_ECOMPILE or
 * TEMPER_EINVALID with a sentence when the container or a cubin is refused. */
int cuda_triton_load(struct cuda_ctx *c, const void *data, size_t size, struct temper_dmodule *m, char *msg,
                     size_t msg_size);
/* The Triton kernel of m a launch names, or NULL. */
const struct cuda_triton_kernel *cuda_triton_find(const struct temper_dmodule *m, const char *name);
/* Readies a launch of a Triton kernel: checks the block (32 * num_warps threads), sets the shared
 * memory its metadata gives into *smem, and fills the two trailing scratch pointers (0 where the
 * kernel takes none; otherwise grown to grid * size bytes and kept with the kernel). */
int cuda_triton_prepare(struct cuda_ctx *c, struct temper_dkernel *k, const size_t grid[3], const size_t block[3],
                        size_t *smem, CUdeviceptr scratch[2], char *msg, size_t msg_size);
/* Unloads m's Triton cubins and frees the kernels' scratch. */
void cuda_triton_free(struct temper_dmodule *m);

/* ---- cuda_driver.c ---- */

/* The driver API and NVRTC; filled once by cuda_load_driver and cuda_load_nvrtc, read-only
 * afterwards. */
extern struct cuda_driver_api cuda_cu;
extern struct cuda_nvrtc_api cuda_nv;

/* Opens the first of names that loads and resolves syms in it. On failure lib->msg lists every
 * name tried with dlerror's text for each. */
void cuda_open_lib(struct cuda_lib *lib, const char *what, const char *const *names, const struct cuda_sym *syms);
/* Loads libnvrtc once per process (thread-safe); fills msg on failure. */
int cuda_load_nvrtc(char *msg, size_t msg_size);
/* Loads both libraries and initialises the driver (cuInit); fills msg on failure. */
int cuda_init(char *msg, size_t msg_size);
/* Writes "CUDA_ERROR_X: text" for r into out. */
void cuda_error_text(CUresult r, char *out, size_t out_size);
/* Makes c's context current on the calling thread. */
int cuda_bind(struct cuda_ctx *c, char *msg, size_t msg_size);
/* Turns a failed driver call into a temper error with "what: CUDA_ERROR_X: text" in msg; kernel
 * faults are TEMPER_ELAUNCH and remembered in c (may be NULL). */
int cuda_fail(struct cuda_ctx *c, CUresult r, int fallback, char *msg, size_t msg_size, const char *what);
/* Fails with the remembered fault when an earlier kernel killed the context, else binds it. */
int cuda_check_alive(struct cuda_ctx *c, char *msg, size_t msg_size);

/* ---- cuda_nvrtc.c ---- */

/* The toolkit's include folders NVRTC is given (the include folder, then include/cccl), found once
 * from $CUDA_HOME, $CUDA_PATH, the loaded NVRTC's own folder or /usr/local/cuda; borrowed
 * pointers, at most max, into dirs. Returns how many (0 when no toolkit headers were found). Call
 * after cuda_load_nvrtc succeeded. */
int cuda_include_dirs(const char **dirs, int max);

/* Compiles CUDA C++ source with NVRTC, without a device context (the ops' compile). */
int cuda_compile(const struct temper_device_info *info, const char *source, const char *options,
                 struct temper_buf *log, void **binary, size_t *binary_size, char *msg, size_t msg_size);

/* ---- cuda_expert.c ---- */

/* Queues a cuBLAS or cuBLASLt routine as an expert baseline (the ops' expert). */
int cuda_expert(void *ctx, const char *routine, int nbufs, struct temper_dbuf *const *bufs, int nscalars,
                const int64_t *scalars, char *msg, size_t msg_size);
/* Frees c's cuBLAS and cuBLASLt handles, workspaces and plan, at close. */
void cuda_expert_free(struct cuda_ctx *c);

#endif
