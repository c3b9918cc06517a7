/* worker_main.c: the temper-worker executable, which libtemper starts with posix_spawn; nobody
 * runs it by hand. Three modes:
 *   temper-worker serve DEVICE PARENT_PID SCRATCH [READ_DIR...] [--hide DIR...]
 *     serves requests on descriptor 3 (a socket), reporting what it does in the page mapped from
 *     descriptor 4, and reaches the calling program's caches only through descriptor 5 (a socket
 *     to its cache service); opens DEVICE on its first job. It starts in namespaces of its own
 *     where the kernel allows (the DIRs after --hide are hidden there), in SCRATCH, with a clean
 *     environment (HOME, TMPDIR and the kernel caches inside SCRATCH).
 *   temper-worker selftest DEVICE PARENT_PID SCRATCH [READ_DIR...] [--hide DIR...]
 *     the same start and the same confinement, then reads one request (the targets) on
 *     descriptor 3, tries each attack a candidate could make (worker_selftest.c) and replies with
 *     what got through. Chosen by the calling program only (tests, `temper devices --selftest`).
 *   temper-worker compile SCRATCH
 *     compiles one request read from descriptor 0 and writes one frame (the log, the binary,
 *     the compiler and target it built for) to descriptor 1 (exit 0 built, 1 did not build, 2
 *     could not try). It runs no candidate and writes no cache: the calling program stores the
 *     binary, sealed. A Triton candidate (backend "triton") is compiled by the configured Python
 *     running temper's helper, confined as worker_triton.c says.
 *   temper-worker python SCRATCH PYTHON [READ_DIR...] [--hide DIR...] -- ARG...
 *     confines itself as a compile process is confined (namespaces of its own, SCRATCH its only
 *     writable folder, no network), with exec kept for the interpreter PYTHON alone beside the
 *     system's programs, then becomes `PYTHON -I -B ARG...`: a task's PyTorch reference
 *     (python/temper_torch.py), which reads its request on descriptor 0 and answers on 1.
 * Every mode confines itself (sandbox.h) before reading any request. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "device/device.h"
#include "temper/eval.h"
#include "temper/kernel.h"
#include "util/sandbox.h"
#include "util/util.h"
#include "worker_cache.h"
#include "eval/worker_impl.h"
#include "worker_selftest.h"
#include "worker_triton.h"

#define COMPILE_REQUEST_MAX (64u << 20)
#define COMPILE_LOG_MAX (64u << 10)
#define OPEN_FILES_MAX 4096
#define FILE_SIZE_MAX (16ull << 30)
#define DIRS_MAX 64

extern char **environ;

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

/* The parts of the status this process can check of itself: its environment holds only allowed
 * variables, and it works in its scratch folder. */
static void check_start(struct temper_sandbox_status *st, const char *scratch)
{
    st->env_clean = 1;
    for (char **e = environ; e && *e; e++)
        if (!temper_sandbox_env_allowed(*e))
            st->env_clean = 0;
    char cwd[PATH_MAX], real[PATH_MAX];
    st->cwd_scratch = getcwd(cwd, sizeof(cwd)) && realpath(scratch, real) && !strcmp(cwd, real);
}

/* Confines a serving (or self-testing) worker: namespaces, then the filter and Landlock. Returns
 * the shared page, or NULL (the process then exits). */
static struct worker_shared *confine(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "temper-worker: %s needs DEVICE PARENT_PID SCRATCH\n", argv[1]);
        return NULL;
    }
    /* End with the parent: a worker left behind would hold the device. */
    if (getppid() != (pid_t)atol(argv[3]))
        return NULL;
    struct stat st;
    if (fstat(4, &st) || (size_t)st.st_size < sizeof(struct worker_shared)) {
        fprintf(stderr, "temper-worker: descriptor 4 is not the shared page\n");
        return NULL;
    }
    struct worker_shared *shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE, MAP_SHARED, 4, 0);
    if (shared == MAP_FAILED)
        return NULL;
    close(4);
    const char *scratch = argv[4];
    char toolkit[4096], once_dir[4096], store[8192];
    toolkit_dir(toolkit, sizeof(toolkit));
    fault_once_dir(once_dir, sizeof(once_dir));
    const char *reads[DIRS_MAX], *hides[DIRS_MAX];
    int nr = 0, nh = 0, hiding = 0;
    reads[nr++] = toolkit;
    for (int i = 5; i < argc; i++) {
        if (!strcmp(argv[i], "--hide"))
            hiding = 1;
        else if (hiding && nh < DIRS_MAX - 1)
            hides[nh++] = argv[i];
        else if (!hiding && nr < 40)
            reads[nr++] = argv[i];
    }
    hides[nh] = NULL;
    runtime_dirs(reads, &nr, DIRS_MAX, store, sizeof(store));
    const char *writes[] = {scratch, once_dir[0] ? once_dir : NULL, NULL};
    /* Profilers (Nsight Compute, compute-sanitizer) whose injected library talks to its tool. */
    int profiled = worker_profiled();
    struct temper_sandbox_ns_config ns = {writes, hides, reads, profiled};
    /* Single-threaded still: the namespaces first (this returns in the worker, two processes
     * below the one the parent started). */
    struct temper_sandbox_status status;
    temper_sandbox_namespaces(&ns, &status);
    pthread_t watcher;
    if (pthread_create(&watcher, NULL, watch_parent, NULL))
        return NULL;
    pthread_detach(watcher);
    if (chdir(scratch))
        return NULL;
    check_start(&status, scratch);
    /* PoCL links each kernel with the system linker: the process keeps exec, of the system's
     * programs only where Landlock holds, until its device turns out to be one that runs no program
     * (CUDA: pipeline.c's ensure_open then refuses it). Task references come from the calling
     * program. It writes only its scratch folder. */
    struct temper_sandbox_config cfg = {reads, writes, 1, "for the system's programs: PoCL runs the linker",
                                        FILE_SIZE_MAX, OPEN_FILES_MAX, 0, NULL, NULL};
    /* Profilers' injected libraries talk to their front end over TCP. The CUDA driver's cuInit
     * fails (CUDA_ERROR_OPERATING_SYSTEM, measured on an H100) when the filter refuses new
     * sockets, and passes when they are allowed: a worker for a CUDA device, or for the default
     * device where one may be, keeps them. Its kernels run on the GPU, never in this process; the
     * namespaces and Landlock still hold. The self-test tries the attacks of a worker whose
     * kernels run in it (PoCL): that worker's confinement. */
    const char *spec = argv[2];
    int cuda = strcmp(argv[1], "selftest") &&
               (!strncmp(spec, "cuda", 4) || (!*spec && !access("/dev/nvidiactl", F_OK)));
    cfg.allow_network = profiled || cuda;
    cfg.why_network = profiled ? "network sockets stay allowed (TEMPER_SANDBOX_NETWORK=1, for a profiler)"
                               : "sockets stay allowed (the CUDA driver's cuInit fails without them; its kernels run "
                                 "on the GPU, never in the worker)";
    shared->sandbox = status;
    temper_sandbox_apply(&cfg, &shared->sandbox);
    return shared;
}

static int serve(int argc, char **argv)
{
    struct worker_shared *shared = confine(argc, argv);
    if (!shared)
        return argc < 5 ? 2 : 0;
    worker_cache_init(5, argv[4]);
    temper_worker_main(3, 3, argv[2], shared);
    return 0;
}

static int selftest(int argc, char **argv)
{
    struct worker_shared *shared = confine(argc, argv);
    if (!shared)
        return argc < 5 ? 2 : 0;
    json_t *targets = worker_recv(3);
    if (!targets)
        return 2;
    json_t *report = worker_selftest_run(targets);
    json_decref(targets);
    json_object_set_new(report, "sandbox", worker_sandbox_json(shared));
    worker_send(3, report);
    json_decref(report);
    return 0;
}

/* Writes the compile process's one output frame to descriptor 1. */
static void compile_output(const char *log, const void *bin, size_t size, const char *compiler, const char *target,
                           const char *specs, const char *verdict)
{
    json_t *out = json_pack("{s:s, s:s, s:s, s:s}", "log", log ? log : "", "compiler", compiler ? compiler : "",
                            "target", target ? target : "", "specs", specs ? specs : "");
    if (verdict && *verdict) /* a Triton candidate's refusal: "invalid" or "compile_error" */
        json_object_set_new(out, "verdict", json_string(verdict));
    if (bin)
        json_object_set_new(out, "binary", json_stringn_nocheck(bin, size));
    char *frame;
    size_t n;
    if (out && !worker_encode(out, &frame, &n)) {
        for (size_t done = 0; done < n;) {
            ssize_t w = write(1, frame + done, n - done);
            if (w <= 0 && errno != EINTR)
                break;
            done += w > 0 ? (size_t)w : 0;
        }
        free(frame);
    }
    json_decref(out);
}

/* Whether specs is a list PoCL takes for POCL_BINARY_SPECIALIZE_WG: digits, letters, dashes,
 * commas. */
static int specs_ok(const char *specs)
{
    for (const char *p = specs; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || *p == '-' || *p == ','))
            return 0;
    return strlen(specs) < 4096;
}

/* Splits a list of PoCL specialisations into the large-grid ones (no "-smallgrid") and the
 * small-grid ones, each comma-separated (size bytes each). */
static void split_specs(const char *specs, char *large, char *small, size_t size)
{
    large[0] = small[0] = 0;
    for (const char *p = specs; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        int is_small = len >= 9 && !strncmp(p + len - 9, "smallgrid", 9);
        char *out = is_small ? small : large;
        size_t used = strlen(out);
        if (len && used + len + 2 < size)
            snprintf(out + used, size - used, "%s%.*s", used ? "," : "", (int)len, p);
        p += len + (end != NULL);
    }
}

/* Whether name is one of the comma-separated list. */
static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && !strncmp(p, name, n))
            return 1;
        p += len + (end != NULL);
    }
    return 0;
}

/* Appends to out the names of dir's entries depth levels down (0: its own entries). */
static void scan_level(const char *dir, int depth, char *out, size_t size)
{
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        if (depth > 0) {
            char sub[4400];
            snprintf(sub, sizeof(sub), "%.3000s/%.1000s", dir, e->d_name);
            scan_level(sub, depth - 1, out, size);
            continue;
        }
        size_t used = strlen(out), n = strlen(e->d_name);
        if (strcmp(e->d_name, "0-0-0") && specs_ok(e->d_name) && !listed(out, e->d_name) && used + n + 2 < size)
            snprintf(out + used, size - used, "%s%s", used ? "," : "", e->d_name);
    }
    if (d)
        closedir(d);
}

/* The specialisations PoCL left in its cache folder dir (DIR/XX/HASH/KERNEL/SPEC), comma-separated
 * into out: what a binary built there holds, whatever was asked for. */
static void scan_specs(const char *dir, char *out, size_t size)
{
    out[0] = 0;
    scan_level(dir, 3, out, size);
}

/* Opens the device (spec, NULL: the default) and builds source with options: its binary in
 * *bin, and the compiler and target it was built for. */
static int build_on_device(const char *spec, const char *source, const char *options, struct temper_buf *log,
                           void **bin, size_t *size, char *compiler, size_t compiler_size, char *target,
                           size_t target_size, char *msg, size_t msg_size)
{
    struct temper_device dev;
    int err = temper_device_open(spec && *spec ? spec : NULL, &dev, msg, msg_size);
    if (err)
        return err;
    struct temper_dmodule *mod = NULL;
    snprintf(compiler, compiler_size, "%s", dev.info.compiler_version);
    snprintf(target, target_size, "%s", dev.info.arch[0] ? dev.info.arch : dev.info.name);
    err = temper_dev_build(&dev, source, options, log, &mod, msg, msg_size);
    if (!err && temper_dev_binary(&dev, mod, bin, size))
        err = temper_fail(msg, msg_size, TEMPER_EUNSUPPORTED, "the device gives no binary to cache");
    if (mod)
        temper_dev_module_free(&dev, mod);
    temper_device_close(&dev);
    return err;
}

/* Reads a compile request from standard input into *req (caller frees): 0, else 2 (after saying
 * so where the request is malformed). */
static int compile_request_read(json_t **req)
{
    struct temper_buf in;
    temper_buf_init(&in, COMPILE_REQUEST_MAX);
    char chunk[65536];
    ssize_t n;
    while ((n = read(0, chunk, sizeof(chunk))) > 0 || (n < 0 && errno == EINTR))
        if (n > 0 && temper_buf_append(&in, chunk, (size_t)n))
            return 2;
    *req = NULL;
    if (!in.data || worker_decode_request(in.data, in.len, req)) {
        compile_output("temper-worker: a malformed compile request\n", NULL, 0, NULL, NULL, NULL, NULL);
        return 2;
    }
    temper_buf_free(&in);
    return 0;
}

/* Builds with PoCL itself (spec, NULL: the default device), the large-grid specialisations
 * (large) in a child first, then the small-grid ones (small) here. */
static int build_with_pocl(const char *spec, const char *source, const char *options, const char *large,
                           const char *small, struct temper_buf *log, void **bin, size_t *size, char *compiler,
                           size_t compiler_size, char *target, size_t target_size, char *msg, size_t msg_size)
{
    /* PoCL builds one work-group function per kernel and local size in a process (a second
     * one for the same size is taken from its memory): the large-grid ones are built first in
     * a child, into the same PoCL cache folder, where the second build finds them and puts
     * them in its binary beside the small-grid ones. */
    if (large[0]) {
        pid_t child = fork();
        if (child == 0) {
            setenv("POCL_BINARY_SPECIALIZE_WG", large, 1);
            void *b = NULL;
            size_t n = 0;
            int failed = build_on_device(spec, source, options, NULL, &b, &n, compiler, compiler_size, target,
                                         target_size, msg, msg_size);
            _exit(failed ? 2 : 0);
        }
        int st = 0;
        while (child > 0 && waitpid(child, &st, 0) < 0 && errno == EINTR)
            ;
    }
    if (small[0])
        setenv("POCL_BINARY_SPECIALIZE_WG", small, 1);
    else
        unsetenv("POCL_BINARY_SPECIALIZE_WG");
    return build_on_device(spec, source, options, log, bin, size, compiler, compiler_size, target, target_size, msg,
                           msg_size);
}

/* Builds offline with the compiler of backend (no program is ever run), for the device the
 * request names. */
static int build_offline(json_t *req, const char *backend, const char *source, const char *options,
                         struct temper_buf *log, void **bin, size_t *size, char *compiler, size_t compiler_size,
                         char *target, size_t target_size, char *msg, size_t msg_size)
{
    const struct temper_device_ops *ops = backend ? temper_device_backend(backend) : NULL;
    struct temper_device_info info;
    memset(&info, 0, sizeof(info));
    snprintf(info.name, sizeof(info.name), "%s", json_string_value(json_object_get(req, "name")));
    snprintf(info.arch, sizeof(info.arch), "%s", json_string_value(json_object_get(req, "arch")));
    snprintf(info.compiler_version, sizeof(info.compiler_version), "%s",
             json_string_value(json_object_get(req, "compiler")));
    snprintf(compiler, compiler_size, "%s", info.compiler_version);
    snprintf(target, target_size, "%s", info.arch[0] ? info.arch : info.name);
    if (!ops || !ops->compile)
        return temper_fail(msg, msg_size, TEMPER_EUNSUPPORTED, "temper-worker: no offline compiler for backend %s",
                           backend ? backend : "(none)");
    return temper_device_compile_offline(ops, &info, source, options, log, bin, size, msg, msg_size);
}

/* A Triton candidate (worker_triton.c): the helper's container, or its message with the verdict it
 * gives ("invalid" for what temper cannot launch, else "compile_error"). Exit 0 built, 1 refused,
 * 2 could not try (no Python, no Triton). */
static int compile_triton(json_t *req, const char *toolkit, const char *scratch)
{
    struct worker_triton_out out;
    int err = worker_triton_compile(req, toolkit, scratch, &out);
    char compiler[96];
    snprintf(compiler, sizeof(compiler), "triton %s", out.version);
    compile_output(err ? out.log : "", out.binary, out.size, out.version[0] ? compiler : "",
                   json_string_value(json_object_get(req, "arch")), "", out.verdict);
    free(out.binary);
    json_decref(req);
    return err == TEMPER_ECOMPILE ? 1 : err ? 2 : 0;
}

static int compile(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    const char *scratch = argv[2];
    struct temper_sandbox_status sst;
    memset(&sst, 0, sizeof(sst)); /* no namespaces here: nothing found before the sandbox */
    char toolkit[4096];
    toolkit_dir(toolkit, sizeof(toolkit));
    const char *reads[32] = {toolkit};
    char store[8192];
    int nr = 1;
    runtime_dirs(reads, &nr, 32, store, sizeof(store));
    char once_dir[4096];
    fault_once_dir(once_dir, sizeof(once_dir));
    const char *writes[] = {scratch, once_dir[0] ? once_dir : NULL, NULL};
    json_t *req = NULL;
    if (compile_request_read(&req))
        return 2;
    const char *backend = json_string_value(json_object_get(req, "backend"));
    if (backend && !strcmp(backend, "triton"))
        return compile_triton(req, toolkit, scratch);
    const char *specs = json_string_value(json_object_get(req, "specs"));
    /* "device": built with the device itself (PoCL, which runs the linker: exec stays allowed);
     * else offline with the backend's compiler (NVRTC: no program is ever run). */
    int on_device = backend && !strcmp(backend, "device");
    char large[4096] = "", small[4096] = "";
    if (on_device && specs && specs_ok(specs))
        split_specs(specs, large, small, sizeof(large));
    /* Injected faults (device.h) count a worker's device calls: a build ahead of the worker's is
     * not one of them (an offline compiler's are: they decide the verdict). */
    if (on_device) {
        unsetenv("TEMPER_FAULT");
        unsetenv("TEMPER_FAULT_ONCE");
    }
    struct temper_sandbox_config cfg = {reads, writes, on_device, on_device ? "PoCL runs the linker" : NULL,
                                        FILE_SIZE_MAX, OPEN_FILES_MAX, 0, NULL, NULL};
    temper_sandbox_apply(&cfg, &sst);
    json_t *src = json_object_get(req, "source");
    const char *options = json_string_value(json_object_get(req, "options"));
    uint64_t mem = (uint64_t)json_integer_value(json_object_get(req, "mem_limit_bytes"));
#if !defined(__SANITIZE_ADDRESS__)
    /* (Not in a sanitizer's build: AddressSanitizer's shadow alone reserves terabytes of address
     * space, and every later mapping would fail.) */
    if (mem) {
        struct rlimit rl = {mem, mem};
        setrlimit(RLIMIT_AS, &rl);
    }
#else
    (void)mem;
#endif
    struct temper_buf log;
    temper_buf_init(&log, COMPILE_LOG_MAX);
    temper_buf_append(&log, "", 0);
    void *bin = NULL;
    size_t size = 0;
    char msg[1024], target[512] = "", compiler[512] = "";
    int err;
    if (!json_is_string(src) || !options)
        err = temper_fail(msg, sizeof(msg), TEMPER_EINVALID, "temper-worker: a compile request without a source");
    else if (on_device)
        err = build_with_pocl(json_string_value(json_object_get(req, "device")), json_string_value(src), options,
                              large, small, &log, &bin, &size, compiler, sizeof(compiler), target, sizeof(target),
                              msg, sizeof(msg));
    else
        err = build_offline(req, backend, json_string_value(src), options, &log, &bin, &size, compiler,
                            sizeof(compiler), target, sizeof(target), msg, sizeof(msg));
    char *text = NULL;
    if (err && asprintf(&text, "%s\n%s", msg, log.data ? log.data : "") < 0)
        text = NULL;
    /* The specialisations the binary holds, as PoCL's cache folder shows them. */
    char held[4096] = "", pocl[4200];
    snprintf(pocl, sizeof(pocl), "%s/pocl", scratch);
    if (on_device && !err)
        scan_specs(pocl, held, sizeof(held));
    compile_output(err ? text : log.data, err ? NULL : bin, size, compiler, target, held, NULL);
    free(text);
    free(bin);
    temper_buf_free(&log);
    json_decref(req);
    return err == TEMPER_ECOMPILE ? 1 : err ? 2 : 0;
}

/* The python mode (above): a task's PyTorch reference, or the import of a problem, confined before
 * the interpreter reads a line of it. */
static int python(int argc, char **argv)
{
    if (argc < 5)
        return 2;
    const char *scratch = argv[2], *py = argv[3];
    const char *reads[DIRS_MAX], *hides[DIRS_MAX];
    int nr = 0, nh = 0, hiding = 0, i = 4;
    for (; i < argc && strcmp(argv[i], "--"); i++) {
        if (!strcmp(argv[i], "--hide"))
            hiding = 1;
        else if (hiding && nh < DIRS_MAX - 1)
            hides[nh++] = argv[i];
        else if (!hiding && nr < DIRS_MAX - 1)
            reads[nr++] = argv[i];
    }
    reads[nr] = NULL;
    hides[nh] = NULL;
    if (i >= argc || argc - i > 16)
        return 2;
    const char *writes[] = {scratch, NULL};
    struct temper_sandbox_ns_config ns = {writes, hides, reads, 0};
    struct temper_sandbox_status st;
    temper_sandbox_namespaces(&ns, &st);
    if (chdir(scratch))
        return 2;
    /* Landlock's rule holds for the file a link resolves to; exec goes through the link, since a
     * virtual environment's interpreter finds its environment from the path it was started by. */
    char real[PATH_MAX];
    const char *execs[] = {realpath(py, real) ? real : py, NULL};
    struct temper_sandbox_config cfg = {reads, writes, 1, "for the task's Python interpreter", FILE_SIZE_MAX,
                                        OPEN_FILES_MAX, 0, NULL, execs};
    if (temper_sandbox_apply(&cfg, &st)) {
        fprintf(stderr, "temper-worker: cannot confine the Python reference: %s\n", st.reason);
        return 2;
    }
    char *args[24] = {(char *)py, "-I", "-B"};
    int na = 3;
    for (i++; i < argc; i++)
        args[na++] = argv[i];
    args[na] = NULL;
    execv(py, args);
    fprintf(stderr, "temper-worker: cannot run %s: %s\n", py, strerror(errno));
    return 2;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "python"))
        _exit(python(argc, argv));
    if (argc >= 2 && !strcmp(argv[1], "serve"))
        return serve(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "selftest"))
        return selftest(argc, argv);
    /* _exit: a sanitizer's exit-time checks would trace the process, which the sandbox refuses. */
    if (argc >= 2 && !strcmp(argv[1], "compile"))
        _exit(compile(argc, argv));
    fprintf(stderr, "temper-worker: started by libtemper (serve or compile mode); not to be run by hand\n");
    return 2;
}
