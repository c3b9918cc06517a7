/* seal.c: SHA-256 (FIPS 180-4), HMAC-SHA-256 (RFC 2104), the per-user cache key and sealed
 * files (see seal.h for who seals and who checks). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "temper/seal.h"
#include "temper/util.h"

/* ---- SHA-256 ---- */

struct sha256 {
    uint32_t h[8];           /* the chaining state */
    unsigned char block[64]; /* bytes not yet hashed */
    size_t used;             /* how many of block hold data */
    uint64_t total;          /* bytes hashed so far */
};

static const uint32_t round_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror(uint32_t x, int n)
{
    return x >> n | x << (32 - n);
}

static void sha256_block(struct sha256 *s, const unsigned char *p)
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ w[i - 15] >> 3;
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ w[i - 2] >> 10;
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + round_k[i] + w[i];
        uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    s->h[0] += a;
    s->h[1] += b;
    s->h[2] += c;
    s->h[3] += d;
    s->h[4] += e;
    s->h[5] += f;
    s->h[6] += g;
    s->h[7] += h;
}

static void sha256_init(struct sha256 *s)
{
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, iv, sizeof(iv));
    s->used = 0;
    s->total = 0;
}

static void sha256_update(struct sha256 *s, const void *data, size_t n)
{
    const unsigned char *p = data;
    s->total += n;
    while (n) {
        size_t take = 64 - s->used < n ? 64 - s->used : n;
        memcpy(s->block + s->used, p, take);
        s->used += take;
        p += take;
        n -= take;
        if (s->used == 64) {
            sha256_block(s, s->block);
            s->used = 0;
        }
    }
}

static void sha256_final(struct sha256 *s, unsigned char out[32])
{
    uint64_t bits = s->total * 8;
    unsigned char pad = 0x80, zero = 0, len[8];
    sha256_update(s, &pad, 1);
    while (s->used != 56)
        sha256_update(s, &zero, 1);
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)(bits >> (56 - 8 * i));
    sha256_update(s, len, 8);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (unsigned char)(s->h[i] >> 24);
        out[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
        out[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
        out[4 * i + 3] = (unsigned char)s->h[i];
    }
}

void temper_sha256(const void *data, size_t n, unsigned char out[32])
{
    struct sha256 s;
    sha256_init(&s);
    sha256_update(&s, data, n);
    sha256_final(&s, out);
}

void temper_sha256_hex(const unsigned char digest[32], char out[65])
{
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", digest[i]);
}

void temper_hmac_sha256(const unsigned char *key, size_t key_len, const void *const *parts, const size_t *sizes,
                        int nparts, unsigned char out[32])
{
    unsigned char k[64] = {0}, pad[64], inner[32];
    if (key_len > 64)
        temper_sha256(key, key_len, k);
    else
        memcpy(k, key, key_len);
    struct sha256 s;
    for (int i = 0; i < 64; i++)
        pad[i] = k[i] ^ 0x36;
    sha256_init(&s);
    sha256_update(&s, pad, 64);
    for (int i = 0; i < nparts; i++)
        sha256_update(&s, parts[i], sizes[i]);
    sha256_final(&s, inner);
    for (int i = 0; i < 64; i++)
        pad[i] = k[i] ^ 0x5c;
    sha256_init(&s);
    sha256_update(&s, pad, 64);
    sha256_update(&s, inner, 32);
    sha256_final(&s, out);
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

static void seal_tag(const unsigned char key[32], const char *kind, const char *name, const void *data, size_t n,
                     unsigned char tag[32])
{
    static const char domain[] = "temper seal v1";
    const void *parts[4] = {domain, kind, name, data};
    size_t sizes[4] = {sizeof(domain), strlen(kind) + 1, strlen(name) + 1, n};
    temper_hmac_sha256(key, 32, parts, sizes, 4, tag);
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
    seal_tag(key, kind, name, data, n, whole + n + 16);
    err = temper_write_file_atomic(path, whole, n + SEAL_TRAILER, msg, msg_size);
    free(whole);
    return err;
}

/* Compares two digests in time that does not depend on where they differ. */
static int same_tag(const unsigned char *a, const unsigned char *b)
{
    unsigned char d = 0;
    for (int i = 0; i < 32; i++)
        d |= a[i] ^ b[i];
    return d == 0;
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
        seal_tag(key, kind, name, text, body, tag);
        ok = same_tag(tag, (const unsigned char *)text + body + 16);
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
