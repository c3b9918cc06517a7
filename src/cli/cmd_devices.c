/* cmd_devices.c: `temper devices`: every device of every backend, queried in a worker. */
#include <dirent.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli.h"
#include "temper/session.h"
#include "eval/eval_internal.h"
#include "util/util.h"

/* The pid of a live process named name (its comm), 0 if none (a zombie is dead, waiting only to
 * be reaped by whoever adopted it). */
static int escapee_pid(const char *name)
{
    DIR *d = opendir("/proc");
    int found = 0;
    for (struct dirent *e; d && !found && (e = readdir(d));) {
        char *end, path[300], comm[64];
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
        FILE *f = fopen(path, "r");
        if (f && fgets(comm, sizeof(comm), f)) {
            comm[strcspn(comm, "\n")] = 0;
            found = !strcmp(comm, name) ? (int)pid : 0;
        }
        if (f)
            fclose(f);
        /* The state follows the name in parentheses in /proc/PID/stat. */
        char stat[512] = "";
        snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
        FILE *sf = found ? fopen(path, "r") : NULL;
        if (sf && fgets(stat, sizeof(stat), sf)) {
            const char *close_paren = strrchr(stat, ')');
            if (close_paren && close_paren[1] == ' ' && (close_paren[2] == 'Z' || close_paren[2] == 'X'))
                found = 0;
        }
        if (sf)
            fclose(sf);
    }
    if (d)
        closedir(d);
    return found;
}

static void help(FILE *out)
{
    fprintf(out, "usage: temper devices [--json]\n\n"
                 "Lists the CUDA and OpenCL devices temper can use, with their compute units, memory,\n"
                 "shared (local) memory and largest block, and below each the language its compiler takes,\n"
                 "its capabilities (offline_compile: compiles without the device; in_process: kernels run\n"
                 "inside temper's worker; expert: vendor-library baselines), its UUID and PCI bus id.\n"
                 "Devices are named cuda:N and opencl:N. Below them, which Triton compiles Triton candidates\n"
                 "(the Python of TEMPER_PYTHON, else python3 on the PATH), or why there is none.\n\n"
                 "Below them, what confines the workers that run candidates, and so what a kernel's code\n"
                 "cannot do from inside one (docs/serve.md, \"What a worker can reach\").\n\n"
                 "  --json       print one JSON object\n"
                 "  --selftest   start a worker that tries those attacks from inside its confinement\n"
                 "               and say what got through (exit 1 if anything did)\n");
}

static const char *on(json_t *sb, const char *key)
{
    return json_is_true(json_object_get(sb, key)) ? "yes" : "NO";
}

/* What confines a worker, and so what a candidate's code cannot do from inside one. */
static void print_sandbox(json_t *sb)
{
    const char *reason = json_string_value(json_object_get(sb, "reason"));
    printf("sandbox    workers: seccomp %s, Landlock %s, no_new_privs %s, limits %s; namespaces: user %s, PID %s, "
           "mount %s\n",
           json_is_true(json_object_get(sb, "seccomp")) ? "on" : "off",
           json_is_true(json_object_get(sb, "landlock")) ? "on" : "off",
           json_is_true(json_object_get(sb, "no_new_privs")) ? "on" : "off",
           json_is_true(json_object_get(sb, "rlimits")) ? "on" : "off",
           json_is_true(json_object_get(sb, "user_namespace")) ? "on" : "off",
           json_is_true(json_object_get(sb, "pid_namespace")) ? "on" : "off",
           json_is_true(json_object_get(sb, "mount_namespace")) ? "on" : "off");
    printf("           clean environment %s; works in its scratch folder %s; writes only its scratch folder %s\n",
           on(sb, "env_clean"), on(sb, "cwd_scratch"), on(sb, "writes_only_scratch"));
    printf("           signals to other processes refused %s; nothing it starts outlives it %s%s\n",
           on(sb, "signals_blocked"), on(sb, "nothing_outlives"),
           json_is_true(json_object_get(sb, "pid_namespace")) ? "" : " (killed with its process group)");
    printf("           new sockets refused %s; other processes' /proc hidden %s\n", on(sb, "sockets_blocked"),
           on(sb, "proc_private"));
    if (reason && *reason)
        printf("           not enforced: %s\n", reason);
}

/* temper devices --selftest: starts a worker in its self-test mode, which tries from inside its
 * confinement what a candidate's code could (the caches, the caller's environment and folder, the
 * store, signals to this process, a host socket, a process left behind), and prints what got
 * through. Exit 0 when nothing did. */
static int selftest(int json)
{
    char cache[4096], home[4096], store[4200], cwd[4096], pocl[4200], tmp[4096], beside[4300], sock[4300],
        escapee[32], pid[24], file[4300] = "";
    temper_cache_dir(cache, sizeof(cache));
    temper_home_dir(home, sizeof(home));
    snprintf(store, sizeof(store), "%s/temper.db", home);
    if (!getcwd(cwd, sizeof(cwd)))
        cwd[0] = 0;
    const char *v = getenv("POCL_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    if (v && *v)
        snprintf(pocl, sizeof(pocl), "%s", v);
    else if (xdg && *xdg)
        snprintf(pocl, sizeof(pocl), "%s/pocl", xdg);
    else
        snprintf(pocl, sizeof(pocl), "%s/.cache/pocl", h && *h ? h : "/nonexistent");
    const char *t = getenv("TMPDIR");
    snprintf(tmp, sizeof(tmp), "%s", t && *t ? t : "/tmp");
    snprintf(beside, sizeof(beside), "%s/temper-selftest-planted-%d", tmp, (int)getpid());
    snprintf(sock, sizeof(sock), "%s/temper-selftest-%d.sock", tmp, (int)getpid());
    snprintf(escapee, sizeof(escapee), "tmpr-esc-%d", (int)getpid() % 1000000);
    snprintf(pid, sizeof(pid), "%d", (int)getpid());
    /* A secret the caller holds ($TEMPER_SELFTEST_SECRET names the variable's value to look for)
     * and a file of its folder ($TEMPER_SELFTEST_FILE, else none). */
    const char *secret = getenv("TEMPER_SELFTEST_SECRET"), *f = getenv("TEMPER_SELFTEST_FILE");
    if (f && *f)
        snprintf(file, sizeof(file), "%s", f);
    char cmdline[4096] = "";
    FILE *cf = fopen("/proc/self/cmdline", "rb");
    size_t cn = cf ? fread(cmdline, 1, sizeof(cmdline) - 1, cf) : 0;
    if (cf)
        fclose(cf);
    for (size_t i = 0; i < cn; i++)
        cmdline[i] = cmdline[i] ? cmdline[i] : ' ';
    cmdline[cn] = 0;
    /* A socket listening on the host, outside any sandbox. */
    int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    unlink(sock);
    if (ls < 0 || strlen(sock) >= sizeof(sa.sun_path) || (memcpy(sa.sun_path, sock, strlen(sock) + 1), 0) ||
        bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 4))
        sock[0] = 0;
    json_t *targets = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "cache", cache, "pocl_cache", pocl,
                                "store", store, "cwd", cwd, "cwd_file", file, "beside_scratch", beside, "host_socket",
                                sock, "parent_pid", pid, "parent_cmdline", cmdline, "escapee_name", escapee);
    if (secret && *secret)
        json_object_set_new(targets, "secret_value", json_string(secret));
    json_t *report = NULL;
    char msg[2048];
    int err = temper_worker_selftest(targets, &report, msg, sizeof(msg));
    json_decref(targets);
    if (ls >= 0)
        close(ls);
    if (sock[0])
        unlink(sock);
    unlink(beside);
    if (err)
        return cli_error(err, msg);
    /* What it started must be gone with it: a process by the name it gave is one that outlived the
     * worker (found by name, ended by its pid). */
    int left = escapee_pid(escapee);
    for (int tries = 0; tries < 20 && left > 0; tries++) {
        usleep(50000); /* a PID namespace's processes die just after its first one */
        left = escapee_pid(escapee);
    }
    if (left > 0) {
        json_object_set_new(report, "detached_process",
                            json_string("ESCAPED: a process it started outlived the worker"));
        kill(left, SIGKILL);
    } else {
        json_object_set_new(report, "detached_process", json_string("blocked: died with the worker"));
    }
    int escaped = 0;
    const char *key;
    json_t *val;
    json_object_foreach(report, key, val)
        escaped += json_is_string(val) && !strncmp(json_string_value(val), "ESCAPED", 7);
    if (json) {
        json_dumpf(report, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
        printf("\n");
    } else {
        json_object_foreach(report, key, val)
            if (json_is_string(val))
                printf("%-26s %s\n", key, json_string_value(val));
        json_t *sb = json_object_get(report, "sandbox");
        if (sb)
            print_sandbox(sb);
        printf("%d of the attacks got through\n", escaped);
    }
    json_decref(report);
    return escaped ? CLI_NOT_OK : CLI_OK;
}

int cmd_devices(int argc, char **argv)
{
    static const struct option opts[] = {{"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'},
                                         {"selftest", no_argument, 0, 's'}, {0, 0, 0, 0}};
    int json = 0, self = 0, c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'j')
            json = 1;
        else if (c == 's')
            self = 1;
        else
            return cli_help_exit(help, c == 'h');
    }
    if (self)
        return selftest(json);
    char msg[2048];
    json_t *r;
    int err = temper_session_list_devices(&r, msg, sizeof(msg));
    if (err)
        return cli_error(err, msg);
    json_t *list = json_object_get(r, "devices");
    if (json) {
        json_dumpf(r, stdout, JSON_INDENT(2));
        printf("\n");
    } else {
        printf("%-10s %-44s %-5s %5s %10s %9s %8s %6s\n", "device", "name", "class", "CUs", "memory", "shared",
               "L2/LLC", "block");
        size_t i;
        json_t *d;
        json_array_foreach(list, i, d)
        {
            if (json_object_get(d, "error")) {
                printf("%-10s error: %s\n", json_string_value(json_object_get(d, "id")),
                       json_string_value(json_object_get(d, "error")));
                continue;
            }
            printf("%-10s %-44.44s %-5s %5lld %8.1f G %7lld K %6.1f M %6lld\n",
                   json_string_value(json_object_get(d, "id")), json_string_value(json_object_get(d, "name")),
                   json_string_value(json_object_get(d, "class")),
                   (long long)json_integer_value(json_object_get(d, "compute_units")),
                   (double)json_integer_value(json_object_get(d, "global_mem_bytes")) / (1 << 30),
                   (long long)json_integer_value(json_object_get(d, "local_mem_optin_bytes")) / 1024,
                   (double)json_integer_value(json_object_get(d, "cache_bytes")) / (1 << 20),
                   (long long)json_integer_value(json_object_get(d, "max_work_group")));
            char caps[128] = "";
            size_t k;
            json_t *cap;
            json_array_foreach(json_object_get(d, "caps"), k, cap)
                snprintf(caps + strlen(caps), sizeof(caps) - strlen(caps), "%s%s", k ? "," : "",
                         json_string_value(cap));
            const char *uuid = json_string_value(json_object_get(d, "uuid"));
            const char *bus = json_string_value(json_object_get(d, "pci_bus_id"));
            printf("%-10s language %s, caps %s, uuid %s, pci %s\n", "",
                   json_string_value(json_object_get(d, "language")), caps[0] ? caps : "none",
                   uuid && *uuid ? uuid : "unknown", bus && *bus ? bus : "unknown");
        }
        const char *kind;
        json_t *why;
        json_object_foreach(json_object_get(r, "unavailable"), kind, why)
            printf("%-10s none: %s\n", kind, json_string_value(why));
        json_t *triton = json_object_get(r, "triton");
        if (triton && json_object_get(triton, "version"))
            printf("%-10s %s: compiles Triton candidates for cuda devices\n", "triton",
                   json_string_value(json_object_get(triton, "version")));
        else if (triton)
            printf("%-10s none: %s\n", "triton", json_string_value(json_object_get(triton, "error")));
        json_t *sb = json_object_get(r, "sandbox");
        if (sb)
            print_sandbox(sb);
    }
    int n = (int)json_array_size(list);
    json_decref(r);
    return n ? CLI_OK : CLI_NODEVICE;
}
