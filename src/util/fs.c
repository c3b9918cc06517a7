/* fs.c: reading and atomically writing files, folders, and where temper keeps its data. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/util.h"

int temper_read_file(const char *path, size_t max_bytes, char **out, size_t *len, char *msg, size_t msg_size)
{
    struct stat st;
    if (!stat(path, &st) && S_ISDIR(st.st_mode))
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "%s: is a folder, not a file", path);
    FILE *f = fopen(path, "rb");
    if (!f)
        return temper_fail(msg, msg_size, errno == ENOENT ? TEMPER_ENOTFOUND : TEMPER_EIO, "%s: %s", path,
                           strerror(errno));
    struct temper_buf b;
    temper_buf_init(&b, max_bytes);
    char chunk[65536];
    size_t n;
    int err = temper_buf_append(&b, "", 0);
    while (!err && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        err = temper_buf_append(&b, chunk, n);
    int read_err = ferror(f);
    fclose(f);
    if (err || read_err) {
        temper_buf_free(&b);
        if (err == TEMPER_ERANGE)
            return temper_fail(msg, msg_size, err, "%s: larger than %zu bytes", path, max_bytes);
        return temper_fail(msg, msg_size, err ? err : TEMPER_EIO, "%s: read failed", path);
    }
    *out = b.data;
    if (len)
        *len = b.len;
    return 0;
}

int temper_mkdirs(const char *path)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
        return TEMPER_ERANGE;
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(tmp, 0755) && errno != EEXIST)
            return TEMPER_EIO;
        *p = '/';
    }
    if (mkdir(tmp, 0755) && errno != EEXIST)
        return TEMPER_EIO;
    return 0;
}

void temper_dirname(const char *path, char *out, size_t out_size)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(out, out_size, ".");
        return;
    }
    if (slash == path) {
        snprintf(out, out_size, "/");
        return;
    }
    snprintf(out, out_size, "%.*s", (int)(slash - path), path);
}

int temper_write_file_atomic(const char *path, const void *data, size_t n, char *msg, size_t msg_size)
{
    char dir[4096], tmp[4200];
    temper_dirname(path, dir, sizeof(dir));
    if (temper_mkdirs(dir))
        return temper_fail(msg, msg_size, TEMPER_EIO, "%s: cannot create folder: %s", dir, strerror(errno));
    snprintf(tmp, sizeof(tmp), "%s.tmp.%d.%llx", path, (int)getpid(), (unsigned long long)temper_now_ns());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0)
        return temper_fail(msg, msg_size, TEMPER_EIO, "%s: %s", tmp, strerror(errno));
    const char *p = data;
    size_t left = n;
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            close(fd);
            unlink(tmp);
            return temper_fail(msg, msg_size, TEMPER_EIO, "%s: write failed", tmp);
        }
        p += w;
        left -= (size_t)w;
    }
    if (close(fd) || rename(tmp, path)) {
        unlink(tmp);
        return temper_fail(msg, msg_size, TEMPER_EIO, "%s: %s", path, strerror(errno));
    }
    return 0;
}

static void data_dir(char *out, size_t size, const char *env, const char *xdg, const char *fallback)
{
    const char *v = getenv(env);
    if (v && *v) {
        snprintf(out, size, "%s", v);
        return;
    }
    v = xdg ? getenv(xdg) : NULL;
    if (v && *v) {
        snprintf(out, size, "%s/temper", v);
        return;
    }
    const char *home = getenv("HOME");
    snprintf(out, size, "%s/%s", home && *home ? home : "/tmp", fallback);
}

const char *temper_home_dir(char *out, size_t out_size)
{
    data_dir(out, out_size, "TEMPER_HOME", "XDG_DATA_HOME", ".local/share/temper");
    return out;
}

const char *temper_cache_dir(char *out, size_t out_size)
{
    data_dir(out, out_size, "TEMPER_CACHE", "XDG_CACHE_HOME", ".cache/temper");
    return out;
}

uint64_t temper_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double temper_now_s(void)
{
    return (double)temper_now_ns() * 1e-9;
}
