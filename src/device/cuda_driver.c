/* cuda_driver.c: loading libcuda and libnvrtc with dlopen, initialising the driver, and turning
 * driver errors into temper errors. */
#include "cuda_impl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cuda_driver_api cuda_cu;
struct cuda_nvrtc_api cuda_nv;
static struct cuda_lib cuda_driver_lib = {PTHREAD_ONCE_INIT, NULL, NULL, 0, ""};
static struct cuda_lib cuda_nvrtc_lib = {PTHREAD_ONCE_INIT, NULL, NULL, 0, ""};

static const char *const cuda_driver_names[] = {"libcuda.so.1", "libcuda.so", NULL};
static const char *const cuda_nvrtc_names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
                                               "/usr/local/cuda/lib64/libnvrtc.so", NULL};

/* Opens the first of names that loads and resolves syms in it. On failure lib->msg lists every
 * name tried with dlerror's text for each. */
void cuda_open_lib(struct cuda_lib *lib, const char *what, const char *const *names,
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

#define CUDA_SYM1(field, n1) {{n1, NULL, NULL}, &cuda_cu.field}
#define CUDA_SYM2(field, n1, n2) {{n1, n2, NULL}, &cuda_cu.field}
#define NVRTC_SYM(field) {{#field, NULL, NULL}, &cuda_nv.field}

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
        CUDA_SYM2(cuDeviceGetUuid, "cuDeviceGetUuid_v2", "cuDeviceGetUuid"),
        CUDA_SYM1(cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId"),
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
    if (!cuda_driver_lib.err) { /* optional: tensor maps need a driver of CUDA 12 or later */
        void *p = dlsym(cuda_driver_lib.handle, "cuTensorMapEncodeTiled");
        memcpy(&cuda_cu.cuTensorMapEncodeTiled, &p, sizeof p);
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
int cuda_load_nvrtc(char *msg, size_t msg_size)
{
    pthread_once(&cuda_nvrtc_lib.once, cuda_load_nvrtc_once);
    if (cuda_nvrtc_lib.err)
        return temper_fail(msg, msg_size, cuda_nvrtc_lib.err, "%s", cuda_nvrtc_lib.msg);
    return 0;
}

/* ---- errors ---- */

/* Writes "CUDA_ERROR_X: text" for r into out. */
void cuda_error_text(CUresult r, char *out, size_t out_size)
{
    const char *name = NULL, *text = NULL;
    if (cuda_cu.cuGetErrorName)
        cuda_cu.cuGetErrorName(r, &name);
    if (cuda_cu.cuGetErrorString)
        cuda_cu.cuGetErrorString(r, &text);
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

/* Makes c's context current on the calling thread, so a device opened on one thread works on
 * another; cheap (a thread-local store in the driver). */
int cuda_bind(struct cuda_ctx *c, char *msg, size_t msg_size)
{
    CUresult r = cuda_cu.cuCtxSetCurrent(c->ctx);
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
int cuda_fail(struct cuda_ctx *c, CUresult r, int fallback, char *msg, size_t msg_size, const char *what)
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

/* Loads both libraries and initialises the driver. Calls cuInit: a process that forks after this
 * cannot use CUDA in the child, so only the device worker should call it. */
int cuda_init(char *msg, size_t msg_size)
{
    int err = cuda_load_driver(msg, msg_size);
    if (err)
        return err;
    err = cuda_load_nvrtc(msg, msg_size);
    if (err)
        return temper_fail(msg, msg_size, err, "the CUDA driver loaded, but %s", cuda_nvrtc_lib.msg);
    CUresult r = cuda_cu.cuInit(0);
    if (r != CUDA_SUCCESS) {
        char e[192];
        cuda_error_text(r, e, sizeof e);
        return temper_fail(msg, msg_size, TEMPER_ENODEVICE, "%s loaded, but cuInit failed: %s",
                           cuda_driver_lib.name, e);
    }
    return 0;
}

/* Fails with the remembered fault when an earlier kernel killed the context. */
int cuda_check_alive(struct cuda_ctx *c, char *msg, size_t msg_size)
{
    if (c->fault != CUDA_SUCCESS)
        return temper_fail(msg, msg_size, TEMPER_ELAUNCH, "%s (the context is unusable after this fault)",
                           c->fault_msg);
    return cuda_bind(c, msg, msg_size);
}
