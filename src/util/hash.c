/* hash.c: content hashes (xxHash XXH3) for the build cache, checksums and candidate identity. */
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "util/util.h"

uint64_t temper_hash64(const void *data, size_t n, uint64_t seed)
{
    return XXH3_64bits_withSeed(data, n, seed);
}

void temper_hash_hex(uint64_t h, char out[17])
{
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

/* Little-endian reads from an image that may be truncated or hostile: 0 past the end. */
static uint64_t le(const unsigned char *b, size_t size, size_t at, int bytes)
{
    uint64_t v = 0;
    if (at > size || (size_t)bytes > size - at)
        return 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | b[at + (size_t)i];
    return v;
}

uint64_t temper_code_hash(const void *binary, size_t size)
{
    enum { SHT_NOTE = 7, SHT_NOBITS = 8, SHDR = 64 };
    const unsigned char *b = binary;
    /* A 64-bit little-endian ELF image, with its section header table inside the image. */
    if (size < 64 || b[0] != 0x7f || b[1] != 'E' || b[2] != 'L' || b[3] != 'F' || b[4] != 2 || b[5] != 1)
        return temper_hash64(binary, size, 0);
    uint64_t shoff = le(b, size, 0x28, 8), entsize = le(b, size, 0x3a, 2), n = le(b, size, 0x3c, 2);
    if (entsize != SHDR || shoff > size || n > (size - shoff) / SHDR)
        return temper_hash64(binary, size, 0);
    uint64_t strndx = le(b, size, 0x3e, 2);
    uint64_t stroff = strndx < n ? le(b, size, shoff + strndx * SHDR + 24, 8) : 0;
    uint64_t strsize = strndx < n ? le(b, size, shoff + strndx * SHDR + 32, 8) : 0;
    if (stroff > size || strsize > size - stroff)
        return temper_hash64(binary, size, 0);
    XXH3_state_t *st = XXH3_createState();
    if (!st)
        return temper_hash64(binary, size, 0);
    XXH3_64bits_reset(st);
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t h = shoff + i * SHDR;
        uint64_t name = le(b, size, h, 4), type = le(b, size, h + 4, 4);
        uint64_t off = le(b, size, h + 24, 8), len = le(b, size, h + 32, 8);
        if (type == SHT_NOTE)
            continue;
        /* the section's name (bounded by the string table), type, and contents */
        if (name < strsize)
            XXH3_64bits_update(st, b + stroff + name, strnlen((const char *)b + stroff + name, strsize - name));
        XXH3_64bits_update(st, &type, sizeof(type));
        if (type != SHT_NOBITS && off <= size && len <= size - off)
            XXH3_64bits_update(st, b + off, len);
        else
            XXH3_64bits_update(st, &len, sizeof(len));
    }
    uint64_t out = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return out;
}
