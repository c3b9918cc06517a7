/* device.h: one interface to compute devices, with an OpenCL and a CUDA implementation.
 * A backend is a table of function pointers plus a context pointer, as ggml's backends are.
 * Every call goes through the thin wrappers below (temper_dev_*), which is also where tests
 * inject faults. Only the device worker process ever opens a device. */
#ifndef TEMPER_DEVICE_H
#define TEMPER_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "util/util.h"

#define TEMPER_DEVICE_OPS_VERSION 1

/* Capabilities of a device (struct temper_device_info's caps), asked instead of a backend's name. */
#define TEMPER_DEVICE_CAP_OFFLINE_COMPILE (1u << 0) /* compiles without a device context (NVRTC) */
#define TEMPER_DEVICE_CAP_IN_PROCESS (1u << 1)      /* kernels run in the worker's own address space (PoCL on a CPU) */
#define TEMPER_DEVICE_CAP_EXPERT (1u << 2)          /* vendor-library experts (expert()) */

/* What a device is and what it can do; filled by the backend's info(). */
struct temper_device_info {
    char backend[16];               /* "cuda" or "opencl" */
    char language[16];              /* "cuda" or "opencl": the source language its compiler takes */
    unsigned caps;                  /* TEMPER_DEVICE_CAP_* flags */
    char uuid[40];                  /* the device's UUID ("GPU-xxxxxxxx-...", or 32 hex digits), "" if unknown */
    char pci_bus_id[32];            /* PCI bus id ("0000:1b:00.0"), "" if unknown or not on PCI */
    int index;                      /* index within its backend */
    char name[256];                 /* the device's own name */
    char vendor[128];               /* vendor string */
    char platform[128];             /* OpenCL platform name, or "CUDA" */
    char driver_version[128];       /* driver version string */
    char compiler_version[128];     /* NVRTC or OpenCL C version; part of the build cache key */
    char arch[32];                  /* target architecture ("sm_90"), or "" where there is none */
    int is_gpu;                     /* 1 for a GPU, 0 for a CPU or other accelerator */
    int compute_units;              /* SMs, or OpenCL compute units */
    int cc_major;                   /* CUDA compute capability major, 0 elsewhere */
    int cc_minor;                   /* CUDA compute capability minor, 0 elsewhere */
    int clock_mhz;                  /* core clock, 0 if unknown */
    int mem_clock_mhz;              /* memory clock, 0 if unknown */
    int mem_bus_bits;               /* memory bus width, 0 if unknown */
    uint64_t global_mem_bytes;      /* device memory */
    uint64_t local_mem_bytes;       /* shared (local) memory per block without opt-in */
    uint64_t local_mem_optin_bytes; /* shared memory per block with opt-in (CUDA); else as above */
    uint64_t cache_bytes;           /* last-level cache (L2 on GPUs), 0 if unknown */
    uint64_t local_mem_per_cu_bytes; /* shared memory per SM (CUDA); OpenCL: as local_mem_bytes */
    int warp_size;                  /* threads of a warp (CUDA), NVIDIA's or AMD's OpenCL extension's, else 1 */
    size_t max_work_group;          /* threads per block at most */
    size_t base_align_bytes;        /* alignment of view offsets (OpenCL sub-buffers) */
};

struct temper_dbuf;    /* a device buffer or a view of one; opaque, owned by the backend */
struct temper_dmodule; /* a built program */
struct temper_dkernel; /* a kernel in a module; freed with its module */

enum temper_karg_kind {
    TEMPER_KARG_BUFFER,
    TEMPER_KARG_I32,
    TEMPER_KARG_I64,
    TEMPER_KARG_F32,
    TEMPER_KARG_TENSORMAP,
};

#define TEMPER_TENSORMAP_MAX_RANK 5

/* A TMA tensor map over a buffer (CUDA, sm_90 and later): the backend encodes it at launch and
 * passes the 128-byte map by value. Dimensions run innermost first. */
struct temper_tensormap {
    struct temper_dbuf *buf;                    /* the tensor's buffer (borrowed) */
    enum temper_dtype dtype;                    /* element type */
    int rank;                                   /* dimensions, 1 to TEMPER_TENSORMAP_MAX_RANK */
    uint64_t dims[TEMPER_TENSORMAP_MAX_RANK];   /* elements per dimension */
    uint64_t strides[TEMPER_TENSORMAP_MAX_RANK]; /* bytes between steps of dimensions 1..rank-1
                                                 * (strides[0] unused) */
    uint32_t box[TEMPER_TENSORMAP_MAX_RANK];    /* elements per dimension of one copy */
    int swizzle;                                /* shared-memory swizzle span in bytes: 0, 32, 64, 128 */
};

/* One kernel argument. */
struct temper_karg {
    enum temper_karg_kind kind; /* which member holds the value */
    union {
        struct temper_dbuf *buf; /* TEMPER_KARG_BUFFER (borrowed) */
        int32_t i32;             /* TEMPER_KARG_I32 */
        int64_t i64;             /* TEMPER_KARG_I64 */
        float f32;               /* TEMPER_KARG_F32 */
        const struct temper_tensormap *tmap; /* TEMPER_KARG_TENSORMAP (borrowed) */
    } v;
};

/* Checks a tensor map against TMA's rules (those of cuTensorMapEncodeTiled; the buffer's address,
 * which the backend checks, aside): 0, or TEMPER_EINVALID with a sentence saying which rule fails. */
int temper_tensormap_check(const struct temper_tensormap *m, char *msg, size_t msg_size);

/* One launch's geometry: grid counts blocks (work-groups), block counts threads. */
struct temper_launch_dims {
    size_t grid[3];    /* blocks per dimension */
    size_t block[3];   /* threads per block per dimension */
    size_t smem_bytes; /* dynamic shared memory (CUDA); OpenCL kernels declare their own */
};

/* A backend. Members marked optional may be NULL, which means the default behaviour described.
 * Every function that takes msg writes a sentence for people there on failure. */
struct temper_device_ops {
    int version;      /* TEMPER_DEVICE_OPS_VERSION */
    const char *name; /* "cuda" or "opencl" */

    /* Number of devices; on TEMPER_ENODEVICE, msg says which libraries and platforms were tried. */
    int (*count)(int *n, char *msg, size_t msg_size);
    int (*open)(int index, void **ctx, char *msg, size_t msg_size);
    void (*close)(void *ctx);
    int (*info)(void *ctx, struct temper_device_info *info);

    int (*alloc)(void *ctx, size_t bytes, struct temper_dbuf **buf, char *msg, size_t msg_size);
    /* A view of [offset, offset + bytes) of parent; offset is a multiple of base_align_bytes.
     * Released before its parent. */
    int (*view)(void *ctx, struct temper_dbuf *parent, size_t offset, size_t bytes, struct temper_dbuf **view,
                char *msg, size_t msg_size);
    void (*release)(void *ctx, struct temper_dbuf *buf);
    int (*write)(void *ctx, struct temper_dbuf *buf, size_t offset, const void *src, size_t bytes, char *msg,
                 size_t msg_size);
    int (*read)(void *ctx, struct temper_dbuf *buf, size_t offset, void *dst, size_t bytes, char *msg,
                size_t msg_size);
    /* Fills bytes with a repeated pattern of pattern_size bytes (1, 2, 4 or 8). */
    int (*fill)(void *ctx, struct temper_dbuf *buf, size_t offset, size_t bytes, const void *pattern,
                size_t pattern_size, char *msg, size_t msg_size);

    /* Optional: compiles source to a loadable binary without a device context (NVRTC), so that
     * the caller can do it in a separate process. The binary is malloc'ed; caller frees. The
     * compiler's log goes to log either way. NULL: the backend compiles in build(). */
    int (*compile)(const struct temper_device_info *info, const char *source, const char *options,
                   struct temper_buf *log, void **binary, size_t *binary_size, char *msg, size_t msg_size);
    /* Builds source in the device's context (OpenCL); NULL where compile() is used. */
    int (*build)(void *ctx, const char *source, const char *options, struct temper_buf *log,
                 struct temper_dmodule **mod, char *msg, size_t msg_size);
    /* Optional: the module's binary, for the build cache; malloc'ed, caller frees. NULL: no cache. */
    int (*binary)(void *ctx, struct temper_dmodule *mod, void **data, size_t *size);
    /* Loads a module from a binary made by compile() or binary(). */
    int (*load)(void *ctx, const void *data, size_t size, struct temper_dmodule **mod, char *msg, size_t msg_size);
    void (*module_free)(void *ctx, struct temper_dmodule *mod);
    int (*kernel)(void *ctx, struct temper_dmodule *mod, const char *name, struct temper_dkernel **kernel,
                  char *msg, size_t msg_size);
    /* Queues one launch; dims->smem_bytes above the default limit is opted into here. */
    int (*launch)(void *ctx, struct temper_dkernel *kernel, const struct temper_launch_dims *dims, int nargs,
                  const struct temper_karg *args, char *msg, size_t msg_size);
    /* Waits for queued work; a fault in a kernel is reported here (TEMPER_ELAUNCH). */
    int (*sync)(void *ctx, char *msg, size_t msg_size);
    /* The timed region: device events around the launches queued between start and stop.
     * timer_stop waits and gives the elapsed device time. */
    int (*timer_start)(void *ctx, char *msg, size_t msg_size);
    int (*timer_stop)(void *ctx, double *elapsed_ms, char *msg, size_t msg_size);
    /* Optional: evicts the last-level cache (a write of twice its size), untimed. NULL: the
     * caller writes a scratch buffer of twice info->cache_bytes with fill(). */
    int (*flush_cache)(void *ctx, char *msg, size_t msg_size);
    /* Optional: queues a vendor-library routine (e.g. "cublas_sgemm") as an expert baseline, on
     * the same queue as launches, so the timer measures it like a kernel. bufs are the task's
     * array arguments in order (outputs, then inputs), scalars its integer scalars in order.
     * TEMPER_EUNSUPPORTED when the routine or its library is not available; NULL: none at all. */
    int (*expert)(void *ctx, const char *routine, int nbufs, struct temper_dbuf *const *bufs, int nscalars,
                  const int64_t *scalars, char *msg, size_t msg_size);
};

/* The backends compiled into this build (NULL-terminated, CUDA first). */
const struct temper_device_ops *const *temper_device_backends(void);
/* The backend named "cuda" or "opencl", or NULL. */
const struct temper_device_ops *temper_device_backend(const char *name);

/* ---- test-only fault injection ----
 * TEMPER_FAULT, read once when a device opens (and by temper_device_compile_offline), makes one
 * call of a kind fail, so that tests can check what a failure at that point does:
 *   TEMPER_FAULT=KIND:N[,KIND:N...]   the N-th call (counted from 1) of KIND fails
 * KIND is alloc (TEMPER_ENOMEM), compile (the compile or build of a module; TEMPER_ECOMPILE),
 * load (TEMPER_ECOMPILE), launch (TEMPER_ELAUNCH), hang (the N-th launch marks the device busy and
 * sleeps forever, so the watchdog's launch timeout fires) or sync (TEMPER_ELAUNCH); forge makes no
 * call fail but, from the N-th launch on, the worker's comparisons with the C reference at the check
 * shapes pass whatever the outputs hold, as they would after a kernel running in the worker (an
 * in-process device) patched them: what the calling program's own judgement must catch. The message
 * starts "injected fault (TEMPER_FAULT=KIND:N)". Calls are counted per opened device (per compile
 * process for offline compiles), so a worker that is started again counts from 1 again; with
 * TEMPER_FAULT_ONCE=FILE a fault that fires creates FILE, and none fires while FILE exists, so
 * that each fires once in a run. A malformed TEMPER_FAULT makes the open fail (TEMPER_EINVALID). */

enum temper_fault_kind {
    TEMPER_FAULT_ALLOC,
    TEMPER_FAULT_COMPILE,
    TEMPER_FAULT_LOAD,
    TEMPER_FAULT_LAUNCH,
    TEMPER_FAULT_HANG,
    TEMPER_FAULT_SYNC,
    TEMPER_FAULT_FORGE,
    TEMPER_FAULT_KINDS /* the number of kinds */
};

/* The faults to inject into one device (or one offline compile) and the calls counted so far. */
struct temper_faults {
    unsigned long at[TEMPER_FAULT_KINDS];    /* the call of each kind that fails, 0 for none */
    unsigned long calls[TEMPER_FAULT_KINDS]; /* calls of each kind so far */
    char once_path[512];                     /* TEMPER_FAULT_ONCE, "" when unset */
    int forged;                              /* 1 once TEMPER_FAULT=forge:N fired */
};

/* Reads TEMPER_FAULT and TEMPER_FAULT_ONCE into *faults (all zero when unset). TEMPER_EINVALID
 * with the variable's text and what is wrong in msg when it is malformed. */
int temper_faults_from_env(struct temper_faults *faults, char *msg, size_t msg_size);

/* An opened device. */
struct temper_device {
    const struct temper_device_ops *ops; /* its backend */
    void *ctx;                           /* the backend's context */
    struct temper_device_info info;      /* filled at open */
    struct temper_dbuf *flush_buf;       /* scratch written to evict the cache, made on first use */
    /* Where an injected hang (TEMPER_FAULT=hang:N) adds its message to the sentence saying what the
     * process is doing (NUL-terminated, fault_note_size bytes), so that the watchdog that ends it can
     * report it; NULL: nowhere. */
    char *fault_note;
    size_t fault_note_size;        /* the size of fault_note */
    uint32_t flush_value;          /* the value of the last cache-evicting fill; changes every time */
    struct temper_faults faults;   /* test-only faults to inject (TEMPER_FAULT), read at open */
};

/* Sets, once per process, the function the wrappers call with 1 as they begin a call that waits
 * for the device (and may hang: a launch, a sync, a read or write) and with 0 as it returns, so
 * that a watchdog in another process can time each wait with its own clock (the worker tells its
 * parent). The pointer is then kept in a read-only page: a kernel running in this process (a CPU
 * device) that writes the process's memory cannot unset it. Returns 0, or -1 when already set or
 * the page cannot be made read-only. */
int temper_device_watch(void (*busy)(int on));

/* Parses "cuda", "cuda:1", "opencl:0"; NULL or "" picks the default. Opens it (the first CUDA
 * device that works, else the first OpenCL device, when none is named). */
int temper_device_open(const char *spec, struct temper_device *dev, char *msg, size_t msg_size);
void temper_device_close(struct temper_device *dev);
/* The name of one TEMPER_DEVICE_CAP_* flag ("offline_compile", "in_process", "expert"), or NULL
 * for any other value; static storage. */
const char *temper_device_cap_name(unsigned cap);
/* Writes 16 UUID bytes as "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (lower-case hex) into out. */
void temper_device_format_uuid(const unsigned char bytes[16], char *out, size_t out_size);
/* The device's name as used on the command line and in the store: "opencl:0". */
void temper_device_id(const struct temper_device *dev, char *out, size_t out_size);

/* Thin wrappers: every call into a backend goes through these. */
int temper_dev_alloc(struct temper_device *d, size_t bytes, struct temper_dbuf **buf, char *msg, size_t n);
int temper_dev_view(struct temper_device *d, struct temper_dbuf *parent, size_t offset, size_t bytes,
                    struct temper_dbuf **view, char *msg, size_t n);
void temper_dev_release(struct temper_device *d, struct temper_dbuf *buf);
int temper_dev_write(struct temper_device *d, struct temper_dbuf *buf, size_t offset, const void *src, size_t bytes,
                     char *msg, size_t n);
int temper_dev_read(struct temper_device *d, struct temper_dbuf *buf, size_t offset, void *dst, size_t bytes,
                    char *msg, size_t n);
int temper_dev_fill(struct temper_device *d, struct temper_dbuf *buf, size_t offset, size_t bytes,
                    const void *pattern, size_t pattern_size, char *msg, size_t n);
int temper_dev_launch(struct temper_device *d, struct temper_dkernel *k, const struct temper_launch_dims *dims,
                      int nargs, const struct temper_karg *args, char *msg, size_t n);
int temper_dev_sync(struct temper_device *d, char *msg, size_t n);
int temper_dev_timer_start(struct temper_device *d, char *msg, size_t n);
int temper_dev_timer_stop(struct temper_device *d, double *elapsed_ms, char *msg, size_t n);
int temper_dev_flush_cache(struct temper_device *d, char *msg, size_t n);
/* Compiles source to a loadable binary without the device's context (NVRTC); TEMPER_EUNSUPPORTED
 * where the backend compiles only in build(). *binary is malloc'ed; the caller frees it. */
int temper_dev_compile(struct temper_device *d, const char *source, const char *options, struct temper_buf *log,
                       void **binary, size_t *binary_size, char *msg, size_t n);
/* Builds source in the device's context (OpenCL); TEMPER_EUNSUPPORTED where compile() is used.
 * *mod is owned by the caller, who frees it with temper_dev_module_free. */
int temper_dev_build(struct temper_device *d, const char *source, const char *options, struct temper_buf *log,
                     struct temper_dmodule **mod, char *msg, size_t n);
/* The module's binary for the build cache (malloc'ed; the caller frees it); TEMPER_EUNSUPPORTED
 * where the backend gives none. */
int temper_dev_binary(struct temper_device *d, struct temper_dmodule *mod, void **data, size_t *size);
/* Loads a module from a binary (borrowed) made by compile or binary; the caller frees *mod with
 * temper_dev_module_free. */
int temper_dev_load(struct temper_device *d, const void *data, size_t size, struct temper_dmodule **mod, char *msg,
                    size_t n);
/* Frees mod and its kernels; NULL is a no-op. */
void temper_dev_module_free(struct temper_device *d, struct temper_dmodule *mod);
/* Looks up kernel name in mod; *kernel is borrowed from mod. */
int temper_dev_kernel(struct temper_device *d, struct temper_dmodule *mod, const char *name,
                      struct temper_dkernel **kernel, char *msg, size_t n);
/* TEMPER_EUNSUPPORTED where the backend has no expert routines. */
int temper_dev_expert(struct temper_device *d, const char *routine, int nbufs, struct temper_dbuf *const *bufs,
                      int nscalars, const int64_t *scalars, char *msg, size_t n);

/* compile() of ops without an opened device, for a compile process: info gives the target
 * (arch, compiler). Injects TEMPER_FAULT's compile fault, counted in this call alone.
 * TEMPER_EUNSUPPORTED where ops has no compile(). *binary is malloc'ed; the caller frees it. */
int temper_device_compile_offline(const struct temper_device_ops *ops, const struct temper_device_info *info,
                                  const char *source, const char *options, struct temper_buf *log, void **binary,
                                  size_t *binary_size, char *msg, size_t n);

#endif
