/* landlock_cuda_probe.c: which Landlock rule keeps the CUDA driver from starting. Each variant runs
 * in a child: it restricts itself with temper's worker rules (system programs readable, /etc /proc
 * /sys /dev /run readable, the NVIDIA nodes and /dev/shm writable with ioctl) plus the variant's
 * extra rule, then loads libcuda and calls cuInit. Build and run on a GPU machine:
 *   cc -O2 -o landlock_cuda_probe bench/landlock_cuda_probe.c -ldl && ./landlock_cuda_probe */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define RIGHTS_ALL_V5 ((1ULL << 16) - 1)
#define FILE_RIGHTS ((1ULL << 0) | (1ULL << 1) | (1ULL << 2) | (1ULL << 14) | (1ULL << 15))
#define READ_RIGHTS ((1ULL << 2) | (1ULL << 3))
#define EXEC (1ULL << 0)

static void allow(int rs, const char *path, uint64_t rights, uint64_t handled)
{
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0)
        return;
    int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY);
    uint64_t a = rights & handled;
    if (dfd < 0)
        a &= FILE_RIGHTS;
    else
        close(dfd);
    struct landlock_path_beneath_attr pb = {a, fd};
    if (a)
        syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
    close(fd);
}

static int probe(int variant)
{
    int abi = (int)syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    uint64_t handled = (1ULL << 13) - 1;
    if (abi >= 2)
        handled |= 1ULL << 13;
    if (abi >= 3)
        handled |= 1ULL << 14;
    if (abi >= 5 && variant != 3)
        handled |= 1ULL << 15;
    struct landlock_ruleset_attr attr = {.handled_access_fs = handled};
    int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0);
    const char *progs[] = {"/usr", "/lib", "/lib64", "/bin", "/sbin", "/opt", NULL};
    const char *reads[] = {"/etc", "/proc", "/sys", "/dev", "/run", NULL};
    const char *writes[] = {"/dev/null", "/dev/zero", "/dev/shm", "/dev/nvidia-caps", "/dev/nvidia-uvm", "/tmp", NULL};
    for (int i = 0; progs[i]; i++)
        allow(rs, progs[i], READ_RIGHTS | EXEC, handled);
    for (int i = 0; reads[i]; i++)
        allow(rs, reads[i], READ_RIGHTS, handled);
    for (int i = 0; writes[i]; i++)
        allow(rs, writes[i], handled & ~EXEC, handled);
    DIR *d = opendir("/dev");
    for (struct dirent *e; d && (e = readdir(d));)
        if (!strncmp(e->d_name, "nvidia", 6)) {
            char p[300];
            snprintf(p, sizeof(p), "/dev/%s", e->d_name);
            allow(rs, p, FILE_RIGHTS & ~EXEC, handled);
        }
    if (d)
        closedir(d);
    const char *name[] = {"temper's rules", "+ read everywhere", "+ every right everywhere", "ioctl not handled",
                          "+ write /proc /sys /run /var", "+ every right on /dev", "+ read and write everywhere",
                          "+ write /proc", "+ write /sys", "+ write /run", "+ write /var", "+ write /proc/self"};
    if (variant == 1)
        allow(rs, "/", READ_RIGHTS, handled);
    if (variant == 2)
        allow(rs, "/", handled, handled);
    if (variant == 4) {
        allow(rs, "/proc", handled & ~EXEC, handled);
        allow(rs, "/sys", handled & ~EXEC, handled);
        allow(rs, "/run", handled & ~EXEC, handled);
        allow(rs, "/var", handled & ~EXEC, handled);
    }
    if (variant >= 7 && variant <= 11) {
        const char *one[] = {"/proc", "/sys", "/run", "/var", "/proc/self"};
        allow(rs, one[variant - 7], handled & ~EXEC, handled);
    }
    if (variant == 5)
        allow(rs, "/dev", handled, handled);
    if (variant == 6)
        allow(rs, "/", READ_RIGHTS | (1ULL << 1) | (1ULL << 14), handled);
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    int r = (int)syscall(SYS_landlock_restrict_self, rs, 0);
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    int (*cu_init)(unsigned) = lib ? (int (*)(unsigned))dlsym(lib, "cuInit") : NULL;
    int rc = cu_init ? cu_init(0) : -1;
    printf("abi %d, variant %d (%s): restrict %d, cuInit %d\n", abi, variant, name[variant], r, rc);
    return 0;
}

int main(void)
{
    for (int v = 0; v < 12; v++) {
        pid_t p = fork();
        if (!p)
            return probe(v);
        waitpid(p, NULL, 0);
    }
    return 0;
}
