/* worker_main.c: the temper-worker executable, which libtemper starts with posix_spawn; nobody
 * runs it by hand. Two modes:
 *   temper-worker serve DEVICE PARENT_PID SCRATCH [READ_DIR...]
 *     serves requests on descriptor 3 (a socket), reporting what it does in the page mapped from
 *     descriptor 4; opens DEVICE on its first job; TMPDIR becomes SCRATCH.
 *   temper-worker compile
 *     compiles one request read from descriptor 0 into the build cache, writing the compiler's
 *     log to descriptor 1 (exit 0 built, 1 did not build, 2 could not try).
 * Both confine themselves (sandbox.h) before reading any request. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include "temper/device.h"
#include "temper/eval.h"
#include "temper/kernel.h"
#include "temper/sandbox.h"
#include "temper/util.h"
#include "worker_impl.h"

#define COMPILE_REQUEST_MAX (64u << 20)
#define COMPILE_LOG_MAX (64u << 10)
#define OPEN_FILES_MAX 4096
#define FILE_SIZE_MAX (16ull << 30)

/* The PoCL kernel cache (it writes there): $POCL_CACHE_DIR, else $XDG_CACHE_HOME/pocl, else
 * ~/.cache/pocl. */
static void pocl_cache_dir(char *out, size_t size)
{
    const char *v = getenv("POCL_CACHE_DIR");
    if (v && *v) {
        snprintf(out, size, "%s", v);
        return;
    }
    v = getenv("XDG_CACHE_HOME");
    if (v && *v) {
        snprintf(out, size, "%s/pocl", v);
        return;
    }
    v = getenv("HOME");
    snprintf(out, size, "%s/.cache/pocl", v && *v ? v : "/tmp");
}

/* The toolkit: the folder above this executable (a build folder or an install prefix). */
static void toolkit_dir(char *out, size_t size)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
        snprintf(out, size, "/usr");
        return;
    }
    self[n] = 0;
    temper_dirname(self, out, size);
    char up[4096];
    temper_dirname(out, up, sizeof(up));
    snprintf(out, size, "%s", up);
}

/* Folders the runtimes load from that may lie outside the system's: CUDA_HOME, CUDA_PATH and
 * LD_LIBRARY_PATH (a CUDA toolkit or a driver in a home folder or an environment). Appends them
 * to reads (up to max entries, NULL-terminated), copying into store. */
static void runtime_dirs(const char **reads, int *nr, int max, char *store, size_t store_size)
{
    const char *vars[] = {"CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH"};
    size_t used = 0;
    for (int v = 0; v < 3; v++) {
        const char *p = getenv(vars[v]);
        while (p && *p && *nr < max - 1) {
            const char *colon = strchr(p, ':');
            size_t len = colon ? (size_t)(colon - p) : strlen(p);
            if (len && used + len + 1 <= store_size) {
                memcpy(store + used, p, len);
                store[used + len] = 0;
                reads[(*nr)++] = store + used;
                used += len + 1;
            }
            p = colon ? colon + 1 : p + len;
        }
    }
    reads[*nr] = NULL;
}

/* The folder of TEMPER_FAULT_ONCE, the file a test's injected fault creates when it fires
 * (device.h), into out; "" when it is not set. Test-only: the sandbox lets the process write there,
 * or the fault could never fire. */
static void fault_once_dir(char *out, size_t size)
{
    const char *once = getenv("TEMPER_FAULT_ONCE");
    out[0] = 0;
    if (once && *once)
        temper_dirname(once, out, size);
}

/* Ends the worker when the parent's end of the socket closes, even in the middle of a job (a
 * parent that dies would otherwise leave a worker holding the device). A thread watching the
 * socket, not PR_SET_PDEATHSIG, which fires when the thread that started the worker ends. */
static void *watch_parent(void *arg)
{
    (void)arg;
    for (;;) {
        struct pollfd pfd = {3, POLLRDHUP, 0};
        if (poll(&pfd, 1, -1) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)))
            _exit(0);
    }
    return NULL;
}

static int serve(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "temper-worker: serve needs DEVICE PARENT_PID SCRATCH\n");
        return 2;
    }
    /* End with the parent: a worker left behind would hold the device. */
    if (getppid() != (pid_t)atol(argv[3]))
        return 0;
    pthread_t watcher;
    if (pthread_create(&watcher, NULL, watch_parent, NULL))
        return 2;
    pthread_detach(watcher);
    struct stat st;
    if (fstat(4, &st) || (size_t)st.st_size < sizeof(struct worker_shared)) {
        fprintf(stderr, "temper-worker: descriptor 4 is not the shared page\n");
        return 2;
    }
    struct worker_shared *shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE, MAP_SHARED, 4, 0);
    if (shared == MAP_FAILED)
        return 2;
    close(4);
    const char *scratch = argv[4];
    setenv("TMPDIR", scratch, 1);
    char cache[4096], pocl[4096], toolkit[4096];
    temper_cache_dir(cache, sizeof(cache));
    pocl_cache_dir(pocl, sizeof(pocl));
    toolkit_dir(toolkit, sizeof(toolkit));
    temper_mkdirs(cache);
    temper_mkdirs(pocl);
    const char *reads[64];
    char store[8192];
    int nr = 0;
    reads[nr++] = toolkit;
    for (int i = 5; i < argc && nr < 40; i++)
        reads[nr++] = argv[i];
    runtime_dirs(reads, &nr, 64, store, sizeof(store));
    /* The CUDA driver's JIT cache, where it exists (the driver runs without it otherwise). */
    char nv[4096];
    const char *nv_env = getenv("CUDA_CACHE_PATH"), *home = getenv("HOME");
    snprintf(nv, sizeof(nv), "%s%s", nv_env && *nv_env ? nv_env : home && *home ? home : "/nonexistent",
             nv_env && *nv_env ? "" : "/.nv");
    char once_dir[4096];
    fault_once_dir(once_dir, sizeof(once_dir));
    const char *writes[] = {scratch, cache, pocl, nv, once_dir[0] ? once_dir : NULL, NULL};
    /* PoCL links each kernel with the system linker: the process keeps exec, of the system's
     * programs only where Landlock holds, until its device turns out to be one that runs no program
     * (CUDA: pipeline.c's ensure_open then refuses it). Task references are built by the parent. */
    struct temper_sandbox_config cfg = {reads, writes, 1,
                                        "for the system's programs: PoCL runs the linker",
                                        FILE_SIZE_MAX, OPEN_FILES_MAX, 0};
    /* Profilers (Nsight Compute) whose injected library talks to its front end over TCP. */
    const char *net = getenv("TEMPER_SANDBOX_NETWORK");
    cfg.allow_network = net && !strcmp(net, "1");
    temper_sandbox_apply(&cfg, &shared->sandbox);
    temper_worker_main(3, 3, argv[2], shared);
    return 0;
}

static int compile(void)
{
    struct temper_sandbox_status sst;
    char cache[4096], toolkit[4096];
    temper_cache_dir(cache, sizeof(cache));
    temper_mkdirs(cache);
    toolkit_dir(toolkit, sizeof(toolkit));
    const char *reads[32] = {toolkit};
    char store[8192];
    int nr = 1;
    runtime_dirs(reads, &nr, 32, store, sizeof(store));
    char once_dir[4096];
    fault_once_dir(once_dir, sizeof(once_dir));
    const char *writes[] = {cache, once_dir[0] ? once_dir : NULL, NULL};
    /* NVRTC compiles in this process: no program is ever run. */
    struct temper_sandbox_config cfg = {reads, writes, 0, NULL, FILE_SIZE_MAX, OPEN_FILES_MAX, 0};
    temper_sandbox_apply(&cfg, &sst);
    struct temper_buf in;
    temper_buf_init(&in, COMPILE_REQUEST_MAX);
    char chunk[65536];
    ssize_t n;
    while ((n = read(0, chunk, sizeof(chunk))) > 0 || (n < 0 && errno == EINTR))
        if (n > 0 && temper_buf_append(&in, chunk, (size_t)n))
            return 2;
    json_t *req = NULL;
    if (!in.data || worker_decode_request(in.data, in.len, &req)) {
        dprintf(1, "temper-worker: a malformed compile request\n");
        return 2;
    }
    temper_buf_free(&in);
    const char *backend = json_string_value(json_object_get(req, "backend"));
    json_t *src = json_object_get(req, "source");
    const char *options = json_string_value(json_object_get(req, "options"));
    const struct temper_device_ops *ops = backend ? temper_device_backend(backend) : NULL;
    if (!ops || !ops->compile || !json_is_string(src) || !options) {
        dprintf(1, "temper-worker: no offline compiler for backend %s\n", backend ? backend : "(none)");
        return 2;
    }
    uint64_t mem = (uint64_t)json_integer_value(json_object_get(req, "mem_limit_bytes"));
    if (mem) {
        struct rlimit rl = {mem, mem};
        setrlimit(RLIMIT_AS, &rl);
    }
    struct temper_device_info info;
    memset(&info, 0, sizeof(info));
    snprintf(info.name, sizeof(info.name), "%s", json_string_value(json_object_get(req, "name")));
    snprintf(info.arch, sizeof(info.arch), "%s", json_string_value(json_object_get(req, "arch")));
    snprintf(info.compiler_version, sizeof(info.compiler_version), "%s",
             json_string_value(json_object_get(req, "compiler")));
    const char *source = json_string_value(src);
    size_t len = json_string_length(src);
    struct temper_buf log;
    temper_buf_init(&log, COMPILE_LOG_MAX);
    temper_buf_append(&log, "", 0);
    void *bin = NULL;
    size_t size = 0;
    char msg[1024];
    int err = temper_device_compile_offline(ops, &info, source, options, &log, &bin, &size, msg, sizeof(msg));
    if (err)
        dprintf(1, "%s\n", msg);
    dprintf(1, "%s", log.data ? log.data : "");
    if (!err) {
        uint64_t key =
            temper_build_key(source, len, options, info.compiler_version, info.arch[0] ? info.arch : info.name);
        err = temper_build_cache_put(key, bin, size) ? 2 : 0;
    }
    return err == TEMPER_ECOMPILE ? 1 : err ? 2 : 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "serve"))
        return serve(argc, argv);
    /* _exit: a sanitizer's exit-time checks would trace the process, which the sandbox refuses. */
    if (argc == 2 && !strcmp(argv[1], "compile"))
        _exit(compile());
    fprintf(stderr, "temper-worker: started by libtemper (serve or compile mode); not to be run by hand\n");
    return 2;
}
