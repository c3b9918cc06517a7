/* device.c: the backend table, opening a device by name, and the thin wrappers through which
 * every device call goes: where hang watch marks are set and where tests inject faults
 * (TEMPER_FAULT, described in device.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "device/device.h"

#ifdef TEMPER_HAVE_CUDA
extern const struct temper_device_ops temper_cuda_ops;
#endif
#ifdef TEMPER_HAVE_OPENCL
extern const struct temper_device_ops temper_opencl_ops;
#endif

static const struct temper_device_ops *const backends[] = {
#ifdef TEMPER_HAVE_CUDA
    &temper_cuda_ops,
#endif
#ifdef TEMPER_HAVE_OPENCL
    &temper_opencl_ops,
#endif
    NULL,
};

const struct temper_device_ops *const *temper_device_backends(void)
{
    return backends;
}

const struct temper_device_ops *temper_device_backend(const char *name)
{
    for (int i = 0; backends[i]; i++)
        if (!strcmp(backends[i]->name, name))
            return backends[i];
    return NULL;
}

/* ---- fault injection ---- */

static const char *const fault_names[TEMPER_FAULT_KINDS] = {"alloc", "compile", "load", "launch", "hang", "sync",
                                                                    "forge"};

int temper_faults_from_env(struct temper_faults *faults, char *msg, size_t msg_size)
{
    memset(faults, 0, sizeof(*faults));
    const char *spec = getenv("TEMPER_FAULT");
    if (!spec || !*spec)
        return 0;
    const char *once = getenv("TEMPER_FAULT_ONCE");
    if (once && strlen(once) >= sizeof(faults->once_path))
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "TEMPER_FAULT_ONCE: the path is longer than %zu bytes",
                           sizeof(faults->once_path) - 1);
    snprintf(faults->once_path, sizeof(faults->once_path), "%s", once ? once : "");
    for (const char *p = spec; *p;) {
        size_t len = strcspn(p, ":,");
        int kind = -1;
        for (int k = 0; k < TEMPER_FAULT_KINDS; k++)
            if (strlen(fault_names[k]) == len && !strncmp(p, fault_names[k], len))
                kind = k;
        char *end = NULL;
        unsigned long at = 0;
        if (kind >= 0 && p[len] == ':' && p[len + 1] >= '1' && p[len + 1] <= '9') {
            errno = 0;
            at = strtoul(p + len + 1, &end, 10);
        }
        if (kind < 0 || !end || errno || (*end && *end != ','))
            return temper_fail(msg, msg_size, TEMPER_EINVALID,
                               "TEMPER_FAULT='%s': expected KIND:N[,KIND:N...] with N from 1 and KIND one of alloc, "
                               "compile, load, launch, hang, sync, forge",
                               spec);
        faults->at[kind] = at;
        p = *end ? end + 1 : end;
    }
    return 0;
}

/* Counts one call of kind; 1 when it is the one to fail (and then fills msg and, with
 * TEMPER_FAULT_ONCE, creates its file; no fault fires while that file exists). */
static int fault_fires(struct temper_faults *f, enum temper_fault_kind kind, char *msg, size_t n)
{
    if (!f->at[kind] || ++f->calls[kind] != f->at[kind])
        return 0;
    if (f->once_path[0]) {
        int fd = open(f->once_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0)
            return 0; /* it fired already in this run (or the file cannot be made: fire none) */
        close(fd);
    }
    if (kind == TEMPER_FAULT_HANG)
        temper_fail(msg, n, TEMPER_EINVALID, "injected fault (TEMPER_FAULT=hang:%lu): launch call %lu never ends",
                    f->at[kind], f->at[kind]);
    else
        temper_fail(msg, n, TEMPER_EINVALID, "injected fault (TEMPER_FAULT=%s:%lu): %s call %lu fails",
                    fault_names[kind], f->at[kind], fault_names[kind], f->at[kind]);
    return 1;
}

/* ---- opening ---- */

static int open_on(const struct temper_device_ops *ops, int index, struct temper_device *dev, char *msg,
                   size_t msg_size)
{
    memset(dev, 0, sizeof(*dev));
    int err = temper_faults_from_env(&dev->faults, msg, msg_size);
    if (err)
        return err;
    err = ops->open(index, &dev->ctx, msg, msg_size);
    if (err)
        return err;
    dev->ops = ops;
    err = ops->info(dev->ctx, &dev->info);
    if (err) {
        ops->close(dev->ctx);
        return temper_fail(msg, msg_size, err, "%s:%d: cannot query the device", ops->name, index);
    }
    snprintf(dev->info.backend, sizeof(dev->info.backend), "%s", ops->name);
    dev->info.index = index;
    return 0;
}

int temper_device_open(const char *spec, struct temper_device *dev, char *msg, size_t msg_size)
{
    if (spec && *spec) {
        char name[32];
        int index = 0;
        const char *colon = strchr(spec, ':');
        size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
        if (n >= sizeof(name))
            return temper_fail(msg, msg_size, TEMPER_EINVALID, "device '%s': expected cuda[:N] or opencl[:N]", spec);
        memcpy(name, spec, n);
        name[n] = 0;
        if (colon) {
            char *end;
            long v = strtol(colon + 1, &end, 10);
            if (!colon[1] || *end || v < 0 || v > 1024)
                return temper_fail(msg, msg_size, TEMPER_EINVALID, "device '%s': N must be a device number", spec);
            index = (int)v;
        }
        const struct temper_device_ops *ops = temper_device_backend(name);
        if (!ops)
            return temper_fail(msg, msg_size, TEMPER_EINVALID,
                               "device '%s': unknown kind '%s' (this build has:%s%s)", spec, name,
                               temper_device_backend("cuda") ? " cuda" : "",
                               temper_device_backend("opencl") ? " opencl" : "");
        int count = 0;
        char why[1024] = "";
        int err = ops->count(&count, why, sizeof(why));
        if (err || index >= count)
            return temper_fail(msg, msg_size, TEMPER_ENODEVICE, "device '%s': not found (%d %s device%s%s%s)", spec,
                               count, name, count == 1 ? "" : "s", why[0] ? "; " : "", why);
        return open_on(ops, index, dev, msg, msg_size);
    }
    struct temper_buf tried;
    temper_buf_init(&tried, 4096);
    temper_buf_append(&tried, "", 0);
    for (int i = 0; backends[i]; i++) {
        int count = 0;
        char why[1024] = "";
        if (!backends[i]->count(&count, why, sizeof(why)) && count > 0) {
            char open_msg[1024];
            if (!open_on(backends[i], 0, dev, open_msg, sizeof(open_msg))) {
                temper_buf_free(&tried);
                return 0;
            }
            snprintf(why, sizeof(why), "%s", open_msg);
        }
        temper_buf_printf(&tried, "\n  %s: %s", backends[i]->name, why[0] ? why : "no devices");
    }
    int err = temper_fail(msg, msg_size, TEMPER_ENODEVICE, "no usable device:%s", tried.data);
    temper_buf_free(&tried);
    return err;
}

void temper_device_close(struct temper_device *dev)
{
    if (!dev->ops)
        return;
    if (dev->flush_buf)
        dev->ops->release(dev->ctx, dev->flush_buf);
    dev->ops->close(dev->ctx);
    dev->ops = NULL;
}

void temper_device_id(const struct temper_device *dev, char *out, size_t out_size)
{
    snprintf(out, out_size, "%s:%d", dev->info.backend, dev->info.index);
}

const char *temper_device_cap_name(unsigned cap)
{
    switch (cap) {
    case TEMPER_DEVICE_CAP_OFFLINE_COMPILE:
        return "offline_compile";
    case TEMPER_DEVICE_CAP_IN_PROCESS:
        return "in_process";
    case TEMPER_DEVICE_CAP_EXPERT:
        return "expert";
    default:
        return NULL;
    }
}

/* The watch hook (temper_device_watch), alone in a page (of up to 64 KiB) that is made read-only
 * once it is set. */
static union {
    void (*busy)(int on); /* called around waits; NULL: none */
    char page[65536];     /* the page it fills */
} watch __attribute__((aligned(65536)));

int temper_device_watch(void (*busy)(int on))
{
    if (watch.busy)
        return -1;
    watch.busy = busy;
    if ((size_t)sysconf(_SC_PAGESIZE) > sizeof(watch))
        return -1;
    return mprotect(&watch, sizeof(watch), PROT_READ) ? -1 : 0;
}

/* Marks the device busy (for the hang watchdog) around calls that wait for kernels. */
static void busy_begin(struct temper_device *d)
{
    (void)d;
    if (watch.busy)
        watch.busy(1);
}

static void busy_end(struct temper_device *d)
{
    (void)d;
    if (watch.busy)
        watch.busy(0);
}

int temper_dev_alloc(struct temper_device *d, size_t bytes, struct temper_dbuf **buf, char *msg, size_t n)
{
    if (fault_fires(&d->faults, TEMPER_FAULT_ALLOC, msg, n)) {
        *buf = NULL;
        return TEMPER_ENOMEM;
    }
    return d->ops->alloc(d->ctx, bytes ? bytes : 1, buf, msg, n);
}

int temper_dev_view(struct temper_device *d, struct temper_dbuf *parent, size_t offset, size_t bytes,
                    struct temper_dbuf **view, char *msg, size_t n)
{
    return d->ops->view(d->ctx, parent, offset, bytes, view, msg, n);
}

void temper_dev_release(struct temper_device *d, struct temper_dbuf *buf)
{
    if (buf)
        d->ops->release(d->ctx, buf);
}

int temper_dev_write(struct temper_device *d, struct temper_dbuf *buf, size_t offset, const void *src, size_t bytes,
                     char *msg, size_t n)
{
    busy_begin(d);
    int err = d->ops->write(d->ctx, buf, offset, src, bytes, msg, n);
    busy_end(d);
    return err;
}

int temper_dev_read(struct temper_device *d, struct temper_dbuf *buf, size_t offset, void *dst, size_t bytes,
                    char *msg, size_t n)
{
    busy_begin(d);
    int err = d->ops->read(d->ctx, buf, offset, dst, bytes, msg, n);
    busy_end(d);
    return err;
}

int temper_dev_fill(struct temper_device *d, struct temper_dbuf *buf, size_t offset, size_t bytes,
                    const void *pattern, size_t pattern_size, char *msg, size_t n)
{
    return d->ops->fill(d->ctx, buf, offset, bytes, pattern, pattern_size, msg, n);
}

int temper_dev_launch(struct temper_device *d, struct temper_dkernel *k, const struct temper_launch_dims *dims,
                      int nargs, const struct temper_karg *args, char *msg, size_t n)
{
    if (fault_fires(&d->faults, TEMPER_FAULT_FORGE, msg, n))
        d->faults.forged = 1; /* not a failure: the comparisons pass from now on */
    if (fault_fires(&d->faults, TEMPER_FAULT_LAUNCH, msg, n))
        return TEMPER_ELAUNCH;
    if (fault_fires(&d->faults, TEMPER_FAULT_HANG, msg, n)) {
        if (d->fault_note && d->fault_note_size) {
            size_t used = strnlen(d->fault_note, d->fault_note_size - 1);
            snprintf(d->fault_note + used, d->fault_note_size - used, " (%s)", msg);
        }
        busy_begin(d);
        for (;;) /* a launch that never ends: the watchdog's launch timeout ends the process */
            sleep(60);
    }
    busy_begin(d);
    int err = d->ops->launch(d->ctx, k, dims, nargs, args, msg, n);
    busy_end(d);
    return err;
}

int temper_dev_sync(struct temper_device *d, char *msg, size_t n)
{
    if (fault_fires(&d->faults, TEMPER_FAULT_SYNC, msg, n))
        return TEMPER_ELAUNCH;
    busy_begin(d);
    int err = d->ops->sync(d->ctx, msg, n);
    busy_end(d);
    return err;
}

int temper_dev_timer_start(struct temper_device *d, char *msg, size_t n)
{
    return d->ops->timer_start(d->ctx, msg, n);
}

int temper_dev_timer_stop(struct temper_device *d, double *elapsed_ms, char *msg, size_t n)
{
    busy_begin(d);
    int err = d->ops->timer_stop(d->ctx, elapsed_ms, msg, n);
    busy_end(d);
    return err;
}

int temper_dev_flush_cache(struct temper_device *d, char *msg, size_t n)
{
    if (d->ops->flush_cache)
        return d->ops->flush_cache(d->ctx, msg, n);
    size_t bytes = (size_t)(d->info.cache_bytes ? d->info.cache_bytes : (8u << 20)) * 2;
    if (!d->flush_buf) {
        int err = temper_dev_alloc(d, bytes, &d->flush_buf, msg, n);
        if (err)
            return err;
    }
    d->flush_value++;
    return d->ops->fill(d->ctx, d->flush_buf, 0, bytes, &d->flush_value, sizeof(d->flush_value), msg, n);
}

/* Appends the injected fault's message to a compiler log, as a compiler's own error would be. */
static void fault_log(struct temper_buf *log, const char *msg)
{
    if (log)
        temper_buf_printf(log, "%s\n", msg);
}

int temper_dev_compile(struct temper_device *d, const char *source, const char *options, struct temper_buf *log,
                       void **binary, size_t *binary_size, char *msg, size_t n)
{
    *binary = NULL;
    *binary_size = 0;
    if (!d->ops->compile)
        return temper_fail(msg, n, TEMPER_EUNSUPPORTED, "%s compiles only in the device's context", d->ops->name);
    if (fault_fires(&d->faults, TEMPER_FAULT_COMPILE, msg, n)) {
        fault_log(log, msg);
        return TEMPER_ECOMPILE;
    }
    return d->ops->compile(&d->info, source, options, log, binary, binary_size, msg, n);
}

int temper_device_compile_offline(const struct temper_device_ops *ops, const struct temper_device_info *info,
                                  const char *source, const char *options, struct temper_buf *log, void **binary,
                                  size_t *binary_size, char *msg, size_t n)
{
    *binary = NULL;
    *binary_size = 0;
    if (!ops->compile)
        return temper_fail(msg, n, TEMPER_EUNSUPPORTED, "%s compiles only in a device's context", ops->name);
    struct temper_faults faults;
    int err = temper_faults_from_env(&faults, msg, n);
    if (err)
        return err;
    if (fault_fires(&faults, TEMPER_FAULT_COMPILE, msg, n)) {
        fault_log(log, msg);
        return TEMPER_ECOMPILE;
    }
    return ops->compile(info, source, options, log, binary, binary_size, msg, n);
}

int temper_dev_build(struct temper_device *d, const char *source, const char *options, struct temper_buf *log,
                     struct temper_dmodule **mod, char *msg, size_t n)
{
    *mod = NULL;
    if (!d->ops->build)
        return temper_fail(msg, n, TEMPER_EUNSUPPORTED, "%s compiles without the device (compile)", d->ops->name);
    if (fault_fires(&d->faults, TEMPER_FAULT_COMPILE, msg, n)) {
        fault_log(log, msg);
        return TEMPER_ECOMPILE;
    }
    return d->ops->build(d->ctx, source, options, log, mod, msg, n);
}

int temper_dev_binary(struct temper_device *d, struct temper_dmodule *mod, void **data, size_t *size)
{
    *data = NULL;
    *size = 0;
    if (!d->ops->binary)
        return TEMPER_EUNSUPPORTED;
    return d->ops->binary(d->ctx, mod, data, size);
}

int temper_dev_load(struct temper_device *d, const void *data, size_t size, struct temper_dmodule **mod, char *msg,
                    size_t n)
{
    *mod = NULL;
    if (fault_fires(&d->faults, TEMPER_FAULT_LOAD, msg, n))
        return TEMPER_ECOMPILE;
    return d->ops->load(d->ctx, data, size, mod, msg, n);
}

void temper_dev_module_free(struct temper_device *d, struct temper_dmodule *mod)
{
    if (mod)
        d->ops->module_free(d->ctx, mod);
}

int temper_dev_kernel(struct temper_device *d, struct temper_dmodule *mod, const char *name,
                      struct temper_dkernel **kernel, char *msg, size_t n)
{
    return d->ops->kernel(d->ctx, mod, name, kernel, msg, n);
}

int temper_dev_expert(struct temper_device *d, const char *routine, int nbufs, struct temper_dbuf *const *bufs,
                      int nscalars, const int64_t *scalars, char *msg, size_t n)
{
    if (!d->ops->expert)
        return temper_fail(msg, n, TEMPER_EUNSUPPORTED, "%s has no expert routines", d->ops->name);
    busy_begin(d);
    int err = d->ops->expert(d->ctx, routine, nbufs, bufs, nscalars, scalars, msg, n);
    busy_end(d);
    return err;
}
