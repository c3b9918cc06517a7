/* cache.c: the content-addressed build cache. A binary is stored under the hash of everything
 * that decides it; writes go to a temporary name and are renamed into place, so concurrent
 * processes share the cache without locks. Every entry is sealed (seal.h) by the process that
 * writes it, which runs no candidate, and its seal is checked when it is read: an entry changed or
 * copied over another one is a miss. A worker never touches the files: its lookups go to the
 * calling program (temper_build_cache_set_remote), and it writes nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel/kernel_internal.h"
#include "util/seal.h"
#include "util/util.h"

#define BUILD_BINARY_MAX (256u << 20)
#define BUILD_SPECS_MAX 4096

/* Set in a worker: where its lookups go. */
static struct temper_build_cache_remote remote;
static int have_remote;

uint64_t temper_build_key(const char *source, size_t len, const char *options, const char *compiler_version,
                          const char *target)
{
    uint64_t h = temper_hash64(source, len, 0x7e397e39ull);
    h = temper_hash64(options, strlen(options), h);
    h = temper_hash64(compiler_version, strlen(compiler_version), h);
    return temper_hash64(target, strlen(target), h);
}

int temper_build_options(enum temper_lang lang, const char *options, char *out, size_t out_size, char *msg,
                         size_t msg_size)
{
    static const char guard[] = " -Dasm=" TEMPER_NO_ASM " -D__asm=" TEMPER_NO_ASM " -D__asm__=" TEMPER_NO_ASM;
    if (snprintf(out, out_size, "%s%s", options, lang == TEMPER_LANG_OPENCL ? guard : "") >= (int)out_size)
        return temper_fail(msg, msg_size, TEMPER_ECOMPILE, "compiler options too long");
    return 0;
}

void temper_build_cache_set_remote(const struct temper_build_cache_remote *r)
{
    have_remote = r != NULL;
    if (r)
        remote = *r;
}

/* The entry's file (suffix "bin" or "specs") and the name its seal binds: the key in hex. */
static void cache_path(uint64_t key, const char *suffix, char *out, size_t out_size, char hex[17])
{
    char cache[4096];
    temper_hash_hex(key, hex);
    snprintf(out, out_size, "%.3000s/build/%.2s/%s.%s", temper_cache_dir(cache, sizeof(cache)), hex, hex + 2, suffix);
}

int temper_build_cache_get(uint64_t key, void **data, size_t *size)
{
    if (have_remote) {
        char specs[8];
        return remote.fetch(remote.user, key, data, size, specs, sizeof(specs)) ? TEMPER_ENOTFOUND : 0;
    }
    char path[TEMPER_PATH_MAX], hex[17];
    cache_path(key, "bin", path, sizeof(path), hex);
    return temper_seal_read(path, "build", hex, BUILD_BINARY_MAX, data, size, NULL, 0) ? TEMPER_ENOTFOUND : 0;
}

int temper_build_cache_has(uint64_t key)
{
    void *data;
    size_t size;
    if (temper_build_cache_get(key, &data, &size))
        return 0;
    free(data);
    return 1;
}

void temper_build_cache_specs(uint64_t key, char *out, size_t out_size)
{
    char path[TEMPER_PATH_MAX], hex[17];
    cache_path(key, "specs", path, sizeof(path), hex);
    void *data;
    size_t size;
    out[0] = 0;
    if (!temper_seal_read(path, "build-specs", hex, BUILD_SPECS_MAX, &data, &size, NULL, 0)) {
        snprintf(out, out_size, "%s", (const char *)data);
        free(data);
    }
}

int temper_build_cache_put_specs(uint64_t key, const void *data, size_t size, const char *specs)
{
    if (have_remote)
        return 0;
    char path[TEMPER_PATH_MAX], hex[17];
    /* The specialisations first: a reader that finds the binary finds what it holds, or an older
     * list (a smaller one, which only costs a compile at launch). */
    if (specs && *specs) {
        cache_path(key, "specs", path, sizeof(path), hex);
        if (temper_seal_write(path, "build-specs", hex, specs, strlen(specs), NULL, 0))
            return TEMPER_EIO;
    }
    if (!data)
        return 0;
    cache_path(key, "bin", path, sizeof(path), hex);
    return temper_seal_write(path, "build", hex, data, size, NULL, 0);
}

int temper_build_cache_put(uint64_t key, const void *data, size_t size)
{
    return temper_build_cache_put_specs(key, data, size, NULL);
}

void temper_build_cache_note(uint64_t key, const char *source, size_t len, const char *options, const char *backend,
                             const char *name, const char *arch, const char *compiler)
{
    if (have_remote && remote.note)
        remote.note(remote.user, key, source, len, options, backend, name, arch, compiler);
}
