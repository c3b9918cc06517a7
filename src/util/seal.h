/* seal.h: keyed hashes (HMAC-SHA-256) over what a later evaluation loads from disk: the task
 * references and the kernel binaries of the build cache. A file is sealed by a process that runs
 * no candidate (the calling program, never a worker) with a per-user key kept in the cache folder
 * ($TEMPER_CACHE/key, mode 0600), which no worker can read (its sandbox covers no part of the
 * cache folder); whatever reads a sealed file back checks its seal first, so a file changed by
 * anything without the key (a worker on a machine without Landlock, another program) is refused
 * and built again, never loaded. The seal binds the file's kind and name to its bytes: a sealed
 * binary copied over another entry does not verify either. */
#ifndef TEMPER_SEAL_H
#define TEMPER_SEAL_H

#include <stddef.h>
#include <stdint.h>

/* HMAC-SHA-256 (RFC 2104, computed by OpenSSL's libcrypto) of the concatenation of
 * parts[0..nparts) under key: 0, or -1 (out zeroed) when libcrypto cannot compute it. */
int temper_hmac_sha256(const unsigned char *key, size_t key_len, const void *const *parts, const size_t *sizes,
                        int nparts, unsigned char out[32]);
/* The 64 lowercase hex digits of a digest plus NUL. */
void temper_sha256_hex(const unsigned char digest[32], char out[65]);

/* The per-user key: read from $TEMPER_CACHE/key, created (32 random bytes, mode 0600) when
 * absent. 0, or TEMPER_EIO with msg saying why (an unreadable key, a cache folder that cannot be
 * written). */
int temper_seal_key(unsigned char key[32], char *msg, size_t msg_size);

/* Writes data to path atomically with a seal for (kind, name) appended (a trailer that loaders of
 * the bytes ignore: an ELF file still loads with it). */
int temper_seal_write(const char *path, const char *kind, const char *name, const void *data, size_t n, char *msg,
                      size_t msg_size);
/* Reads path, checks its seal for (kind, name) and returns the bytes without the trailer in *data
 * (caller frees; NUL-terminated past *n). TEMPER_ENOTFOUND when there is no such file;
 * TEMPER_EINVALID when it has no seal or a wrong one (changed, or copied from another name);
 * TEMPER_ERANGE when it is over max_bytes. */
int temper_seal_read(const char *path, const char *kind, const char *name, size_t max_bytes, void **data, size_t *n,
                     char *msg, size_t msg_size);

#endif
