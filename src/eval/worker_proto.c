/* worker_proto.c: the frames the parent and a worker process exchange over their socket (the
 * worker's serving loop is worker_serve.c). A frame is a 4-byte little-endian length, then that
 * many bytes of JSON. JSON strings must be UTF-8, but a candidate's source may hold any byte (a
 * Latin-1 comment, a NUL): a top-level string that is not valid UTF-8, or holds a NUL, travels
 * base64 encoded under its key with "_b64" appended, and is restored on the other side. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "temper/eval.h"
#include "worker_impl.h"

#define B64_SUFFIX "_b64"

static const char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int worker_utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        size_t extra;
        unsigned min;
        if (c == 0)
            return 0;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf) {
            extra = 1;
            min = 0x80;
        } else if (c >= 0xe0 && c <= 0xef) {
            extra = 2;
            min = 0x800;
        } else if (c >= 0xf0 && c <= 0xf4) {
            extra = 3;
            min = 0x10000;
        } else {
            return 0;
        }
        if (n - i <= extra)
            return 0;
        unsigned cp = c & (0x3fu >> extra);
        for (size_t k = 1; k <= extra; k++) {
            if ((p[i + k] & 0xc0) != 0x80)
                return 0;
            cp = (cp << 6) | (p[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        i += extra + 1;
    }
    return 1;
}

char *worker_b64_encode(const unsigned char *in, size_t n)
{
    char *out = malloc((n + 2) / 3 * 4 + 1);
    if (!out)
        return NULL;
    char *o = out;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        *o++ = b64_alphabet[(v >> 18) & 63];
        *o++ = b64_alphabet[(v >> 12) & 63];
        *o++ = i + 1 < n ? b64_alphabet[(v >> 6) & 63] : '=';
        *o++ = i + 2 < n ? b64_alphabet[v & 63] : '=';
    }
    *o = 0;
    return out;
}

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

int worker_b64_decode(const char *in, size_t n, char **out, size_t *len)
{
    if (n % 4)
        return -1;
    char *buf = malloc(n / 4 * 3 + 1);
    if (!buf)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4];
        for (int k = 0; k < 4; k++)
            v[k] = b64_value((unsigned char)in[i + k]);
        int last = i + 4 == n;
        int pad = last && in[i + 3] == '=' ? (in[i + 2] == '=' ? 2 : 1) : 0;
        if (v[0] < 0 || v[1] < 0 || (pad < 2 && v[2] < 0) || (pad < 1 && v[3] < 0)) {
            free(buf);
            return -1;
        }
        unsigned w = (unsigned)v[0] << 18 | (unsigned)v[1] << 12 | (unsigned)(pad < 2 ? v[2] : 0) << 6 |
                     (unsigned)(pad < 1 ? v[3] : 0);
        buf[o++] = (char)(w >> 16);
        if (pad < 2)
            buf[o++] = (char)(w >> 8);
        if (pad < 1)
            buf[o++] = (char)w;
    }
    buf[o] = 0;
    *out = buf;
    *len = o;
    return 0;
}

int worker_encode(json_t *msg, char **frame, size_t *frame_len)
{
    *frame = NULL;
    json_t *copy = NULL;
    const char *key;
    json_t *value;
    void *tmp;
    json_object_foreach_safe(msg, tmp, key, value)
    {
        if (!json_is_string(value) || worker_utf8_valid(json_string_value(value), json_string_length(value)))
            continue;
        if (!copy && !(copy = json_copy(msg)))
            return -1;
        char name[256];
        if (snprintf(name, sizeof(name), "%s" B64_SUFFIX, key) >= (int)sizeof(name)) {
            json_decref(copy);
            return -1;
        }
        char *b64 = worker_b64_encode((const unsigned char *)json_string_value(value), json_string_length(value));
        if (!b64 || json_object_set_new(copy, name, json_string(b64)) || json_object_del(copy, key)) {
            free(b64);
            json_decref(copy);
            return -1;
        }
        free(b64);
    }
    char *text = json_dumps(copy ? copy : msg, JSON_COMPACT);
    json_decref(copy);
    if (!text)
        return -1;
    size_t n = strlen(text);
    if (n > WORKER_FRAME_MAX) {
        free(text);
        return -1;
    }
    char *out = malloc(n + 4);
    if (!out) {
        free(text);
        return -1;
    }
    for (int i = 0; i < 4; i++)
        out[i] = (char)((uint32_t)n >> (8 * i));
    memcpy(out + 4, text, n);
    free(text);
    *frame = out;
    *frame_len = n + 4;
    return 0;
}

size_t worker_frame_size(const void *data, size_t len)
{
    if (len < 4)
        return 0;
    const unsigned char *p = data;
    uint32_t n = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    return (size_t)n + 4;
}

/* Replaces every byte that is not part of valid UTF-8 (and every NUL) with U+FFFD; caller frees. */
static char *utf8_sanitize(const char *s, size_t n)
{
    char *out = malloc(n * 3 + 1), *o = out;
    if (!out)
        return NULL;
    size_t i = 0;
    while (i < n) {
        size_t len = 1;
        unsigned char c = (unsigned char)s[i];
        if (c >= 0xc2 && c <= 0xdf)
            len = 2;
        else if (c >= 0xe0 && c <= 0xef)
            len = 3;
        else if (c >= 0xf0 && c <= 0xf4)
            len = 4;
        if (i + len <= n && worker_utf8_valid(s + i, len)) {
            memcpy(o, s + i, len);
            o += len;
            i += len;
        } else {
            memcpy(o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        }
    }
    *o = 0;
    return out;
}

/* Decodes one whole frame; exact: the bytes must be one frame, no more, no less. raw: restore
 * "_b64" keys byte for byte (requests); else as valid UTF-8 (replies, which reach users). */
static int decode_frame(const void *data, size_t len, int raw, json_t **out)
{
    *out = NULL;
    size_t want = worker_frame_size(data, len);
    if (!want || want != len || len - 4 > WORKER_FRAME_MAX)
        return -1;
    json_t *msg = json_loadb((const char *)data + 4, len - 4, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(msg)) {
        json_decref(msg);
        return -1;
    }
    const char *key;
    json_t *value;
    void *tmp;
    json_object_foreach_safe(msg, tmp, key, value)
    {
        size_t klen = strlen(key), slen = strlen(B64_SUFFIX);
        if (klen <= slen || strcmp(key + klen - slen, B64_SUFFIX))
            continue;
        char *bytes = NULL;
        size_t n = 0;
        char name[256];
        if (!json_is_string(value) || klen - slen >= sizeof(name) ||
            worker_b64_decode(json_string_value(value), json_string_length(value), &bytes, &n)) {
            json_decref(msg);
            return -1;
        }
        snprintf(name, sizeof(name), "%.*s", (int)(klen - slen), key);
        json_t *s;
        if (raw) {
            s = json_stringn_nocheck(bytes, n);
        } else {
            char *clean = utf8_sanitize(bytes, n);
            s = clean ? json_string(clean) : NULL;
            free(clean);
        }
        free(bytes);
        if (s && json_object_get(msg, name)) {
            json_decref(s); /* the same key both plain and in base64 */
            s = NULL;
        }
        if (!s || json_object_set_new(msg, name, s) || json_object_del(msg, key)) {
            json_decref(msg);
            return -1;
        }
    }
    *out = msg;
    return 0;
}

int worker_decode_request(const void *data, size_t len, json_t **req)
{
    return decode_frame(data, len, 1, req);
}

int worker_decode_reply(const void *data, size_t len, json_t **reply)
{
    return decode_frame(data, len, 0, reply);
}

json_t *worker_sandbox_json(const struct worker_shared *s)
{
    if (!s)
        return json_null();
    const struct temper_sandbox_status *st = &s->sandbox;
    json_t *j = json_pack("{s:b, s:b, s:b, s:b, s:b, s:b, s:i, s:s}", "no_new_privs", st->no_new_privs, "rlimits",
                          st->rlimits, "seccomp", st->seccomp, "network_blocked", st->network_blocked, "exec_blocked",
                          st->exec_blocked, "landlock", st->landlock != 0, "landlock_abi", st->landlock, "reason",
                          st->reason);
    /* What a candidate's code cannot reach (docs/serve.md, "What a worker can reach"). */
    json_object_set_new(j, "sockets_blocked", json_boolean(st->sockets_blocked));
    json_object_set_new(j, "signals_blocked", json_boolean(st->signals_blocked));
    json_object_set_new(j, "user_namespace", json_boolean(st->user_ns));
    json_object_set_new(j, "pid_namespace", json_boolean(st->pid_ns));
    json_object_set_new(j, "mount_namespace", json_boolean(st->mount_ns));
    json_object_set_new(j, "proc_private", json_boolean(st->proc_private));
    json_object_set_new(j, "env_clean", json_boolean(st->env_clean));
    json_object_set_new(j, "cwd_scratch", json_boolean(st->cwd_scratch));
    /* Derived: the worker writes only its scratch folder (Landlock, or a read-only mount
     * namespace), and nothing it starts outlives it (its PID namespace, or its process group,
     * which the filter keeps everything in and the parent kills). */
    json_object_set_new(j, "writes_only_scratch", json_boolean(st->landlock || st->mount_ns));
    json_object_set_new(j, "nothing_outlives", json_boolean(st->pid_ns || st->signals_blocked));
    return j;
}

int worker_send(int fd, json_t *msg)
{
    char *frame;
    size_t n;
    if (worker_encode(msg, &frame, &n))
        return -1;
    const char *p = frame;
    size_t left = n;
    while (left) {
        ssize_t w = send(fd, p, left, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            free(frame);
            return -1;
        }
        p += w;
        left -= (size_t)w;
    }
    free(frame);
    return 0;
}

static int read_all(int fd, void *data, size_t n)
{
    char *p = data;
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

json_t *worker_recv(int fd)
{
    unsigned char head[4];
    if (read_all(fd, head, 4))
        return NULL;
    size_t size = worker_frame_size(head, 4);
    if (size - 4 > WORKER_FRAME_MAX)
        return NULL;
    char *frame = malloc(size);
    if (!frame)
        return NULL;
    memcpy(frame, head, 4);
    json_t *req = NULL;
    if (!read_all(fd, frame + 4, size - 4))
        worker_decode_request(frame, size, &req);
    free(frame);
    return req;
}
