/* seal.c: HMAC-SHA-256 (OpenSSL's libcrypto), the per-user cache key and sealed files (see
 * seal.h for who seals and who checks). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "util/seal.h"
#include "util/util.h"

/* ---- HMAC-SHA-256, from OpenSSL's libcrypto ---- */

void temper_sha256_hex(const unsigned char digest[32], char out[65])
{
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", digest[i]);
}

int temper_hmac_sha256(const unsigned char *key, size_t key_len, const void *const *parts, const size_t *sizes,
                       int nparts, unsigned char out[32])
{
    int ok = 0;
    size_t len = 0;
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", (char *)"SHA256", 0), OSSL_PARAM_construct_end()};
    if (ctx && EVP_MAC_init(ctx, key, key_len, params)) {
        ok = 1;
        for (int i = 0; i < nparts && ok; i++)
            ok = EVP_MAC_update(ctx, parts[i], sizes[i]);
        ok = ok && EVP_MAC_final(ctx, out, &len, 32) && len == 32;
    }
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
    if (!ok)
        memset(out, 0, 32);
    return ok ? 0 : -1;
}

/* ---- the key ---- */

static int read_key(const char *path, unsigned char key[32])
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    struct stat st;
    ssize_t n = fstat(fd, &st) ? -1 : read(fd, key, 32);
    close(fd);
    /* A key others could read is no key: it must be the user's own and private. */
    if (n != 32 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
        errno = n == 32 ? EPERM : EINVAL;
        return -2;
    }
    return 0;
}

int temper_seal_key(unsigned char key[32], char *msg, size_t msg_size)
{
    char cache[4096], path[4200], tmp[4300];
    temper_cache_dir(cache, sizeof(cache));
    snprintf(path, sizeof(path), "%s/key", cache);
    /* Read each time (32 bytes): the cache folder may change between calls, and a key whose mode
     * changed is refused at once. */
    int r = read_key(path, key);
    if (r == -1 && errno == ENOENT) {
        /* Made under a temporary name and linked into place: of two processes making it at once,
         * one links and the other reads what it linked. */
        unsigned char fresh[32];
        snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
        temper_mkdirs(cache);
        chmod(cache, 0700);
        int fd = getrandom(fresh, sizeof(fresh), 0) == (ssize_t)sizeof(fresh)
                     ? open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)
                     : -1;
        int ok = fd >= 0 && write(fd, fresh, sizeof(fresh)) == (ssize_t)sizeof(fresh);
        if (fd >= 0)
            ok &= close(fd) == 0;
        if (ok && link(tmp, path) && errno != EEXIST)
            ok = 0;
        unlink(tmp);
        r = ok ? read_key(path, key) : -1;
    }
    if (r) {
        int e = errno;
        return temper_fail(msg, msg_size, TEMPER_EIO,
                           "%s: the key that seals the build cache %s (%s); it must be a 32-byte file of this user, "
                           "mode 0600",
                           path, r == -2 ? "is not private or not whole" : "cannot be read or made", strerror(e));
    }
    return 0;
}

/* ---- sealed files ---- */

#define SEAL_MAGIC "temperS1"
#define SEAL_TRAILER (8 + 8 + 32) /* magic, length of the data (little-endian), tag */

/* 0, or -1 when libcrypto could not compute the tag (no HMAC or SHA-256 in its providers). */
static int seal_tag(const unsigned char key[32], const char *kind, const char *name, const void *data, size_t n,
                    unsigned char tag[32])
{
    static const char domain[] = "temper seal v1";
    const void *parts[4] = {domain, kind, name, data};
    size_t sizes[4] = {sizeof(domain), strlen(kind) + 1, strlen(name) + 1, n};
    return temper_hmac_sha256(key, 32, parts, sizes, 4, tag);
}

int temper_seal_write(const char *path, const char *kind, const char *name, const void *data, size_t n, char *msg,
                      size_t msg_size)
{
    unsigned char key[32];
    int err = temper_seal_key(key, msg, msg_size);
    if (err)
        return err;
    unsigned char *whole = malloc(n + SEAL_TRAILER);
    if (!whole)
        return TEMPER_ENOMEM;
    memcpy(whole, data, n);
    memcpy(whole + n, SEAL_MAGIC, 8);
    for (int i = 0; i < 8; i++)
        whole[n + 8 + i] = (unsigned char)((uint64_t)n >> (8 * i));
    if (seal_tag(key, kind, name, data, n, whole + n + 16)) {
        free(whole);
        return temper_fail(msg, msg_size, TEMPER_EIO, "%s: OpenSSL's libcrypto could not compute an HMAC-SHA-256",
                           path);
    }
    err = temper_write_file_atomic(path, whole, n + SEAL_TRAILER, msg, msg_size);
    free(whole);
    return err;
}

int temper_seal_read(const char *path, const char *kind, const char *name, size_t max_bytes, void **data, size_t *n,
                     char *msg, size_t msg_size)
{
    *data = NULL;
    *n = 0;
    char *text;
    size_t len;
    int err = temper_read_file(path, max_bytes + SEAL_TRAILER, &text, &len, msg, msg_size);
    if (err)
        return err;
    unsigned char key[32], tag[32];
    if ((err = temper_seal_key(key, msg, msg_size))) {
        free(text);
        return err;
    }
    size_t body = len >= SEAL_TRAILER ? len - SEAL_TRAILER : 0;
    uint64_t said = 0;
    for (int i = 0; len >= SEAL_TRAILER && i < 8; i++)
        said |= (uint64_t)(unsigned char)text[body + 8 + (size_t)i] << (8 * i);
    int ok = len >= SEAL_TRAILER && !memcmp(text + body, SEAL_MAGIC, 8) && said == body;
    if (ok) {
        /* in time that does not depend on where the tags differ */
        ok = !seal_tag(key, kind, name, text, body, tag) && !CRYPTO_memcmp(tag, text + body + 16, 32);
    }
    if (!ok) {
        int has_seal = len >= SEAL_TRAILER && !memcmp(text + body, SEAL_MAGIC, 8);
        free(text);
        return temper_fail(msg, msg_size, TEMPER_EINVALID,
                           "%s: %s; it was not written by temper with this user's key (changed, or copied from "
                           "another entry)",
                           path, has_seal ? "its seal does not verify" : "it has no seal");
    }
    text[body] = 0;
    *data = text;
    *n = body;
    return 0;
}
