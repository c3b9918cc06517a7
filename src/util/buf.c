/* buf.c: growable byte buffers with a hard maximum, so no input can grow memory without bound, and
 * bytes shown safely in messages. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

void temper_buf_init(struct temper_buf *b, size_t max_bytes)
{
    memset(b, 0, sizeof(*b));
    b->max_bytes = max_bytes;
}

void temper_buf_free(struct temper_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

static int buf_reserve(struct temper_buf *b, size_t extra)
{
    if (extra > b->max_bytes || b->len > b->max_bytes - extra)
        return TEMPER_ERANGE;
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p)
        return TEMPER_ENOMEM;
    b->data = p;
    b->cap = cap;
    return 0;
}

int temper_buf_append(struct temper_buf *b, const void *data, size_t n)
{
    int err = buf_reserve(b, n);
    if (err)
        return err;
    memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = 0;
    return 0;
}

int temper_buf_printf(struct temper_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return TEMPER_EINVALID;
    int err = buf_reserve(b, (size_t)n);
    if (err)
        return err;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

void temper_show_bytes(const char *text, size_t n, size_t max_shown, char *out, size_t out_size)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0, i = 0;
    if (!out_size)
        return;
    for (; i < n && i < max_shown && o + 5 < out_size; i++) {
        unsigned char ch = (unsigned char)text[i];
        if (ch >= 0x20 && ch < 0x7f) {
            out[o++] = (char)ch;
        } else {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[ch >> 4];
            out[o++] = hex[ch & 15];
        }
    }
    if (i < n && o + 4 < out_size) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = 0;
}
