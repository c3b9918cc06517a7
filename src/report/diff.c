/* diff.c: a line diff by longest common subsequence, for the report's "best kernel against the
 * baseline" (the table of lines kept, removed and added). Quadratic in the lines, so bounded by
 * TEMPER_DIFF_MAX_LINES. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report_impl.h"
#include "temper/error.h"

/* A text's lines: start and length of each. */
struct lines {
    const char **at; /* each line's first byte */
    size_t *len;     /* its length without the newline */
    size_t n;        /* how many */
};

static int split(const char *text, struct lines *l)
{
    memset(l, 0, sizeof(*l));
    size_t n = 0;
    for (const char *p = text; *p; p++)
        n += *p == '\n';
    n += *text && text[strlen(text) - 1] != '\n';
    if (n > TEMPER_DIFF_MAX_LINES)
        return TEMPER_ERANGE;
    l->at = malloc((n + 1) * sizeof(*l->at));
    l->len = malloc((n + 1) * sizeof(*l->len));
    if (!l->at || !l->len)
        return TEMPER_ENOMEM;
    const char *p = text;
    for (size_t i = 0; i < n; i++) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        l->at[i] = p;
        l->len[i] = len;
        p += len + (end != NULL);
    }
    l->n = n;
    return 0;
}

static void lines_free(struct lines *l)
{
    free(l->at);
    free(l->len);
}

static int same(const struct lines *a, size_t i, const struct lines *b, size_t j)
{
    return a->len[i] == b->len[j] && !memcmp(a->at[i], b->at[j], a->len[i]);
}

int temper_diff_lines(const char *old_text, const char *new_text, struct temper_diff_line **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    struct lines a, b;
    int err = split(old_text ? old_text : "", &a);
    if (!err)
        err = split(new_text ? new_text : "", &b);
    else
        memset(&b, 0, sizeof(b));
    /* lcs[i][j]: the longest common subsequence of a's lines from i and b's from j. */
    size_t cols = b.n + 1;
    uint16_t *lcs = err ? NULL : calloc((a.n + 1) * cols, sizeof(*lcs));
    struct temper_diff_line *d = err ? NULL : malloc((a.n + b.n + 1) * sizeof(*d));
    if (!err && (!lcs || !d))
        err = TEMPER_ENOMEM;
    if (!err) {
        for (size_t i = a.n; i-- > 0;)
            for (size_t j = b.n; j-- > 0;)
                lcs[i * cols + j] = same(&a, i, &b, j) ? lcs[(i + 1) * cols + j + 1] + 1 :
                                    lcs[(i + 1) * cols + j] >= lcs[i * cols + j + 1] ? lcs[(i + 1) * cols + j] :
                                                                                      lcs[i * cols + j + 1];
        size_t i = 0, j = 0, k = 0;
        while (i < a.n || j < b.n) {
            if (i < a.n && j < b.n && same(&a, i, &b, j)) {
                d[k++] = (struct temper_diff_line){' ', a.at[i], a.len[i], (int)i + 1, (int)j + 1};
                i++, j++;
            } else if (i < a.n && (j == b.n || lcs[(i + 1) * cols + j] >= lcs[i * cols + j + 1])) {
                d[k++] = (struct temper_diff_line){'-', a.at[i], a.len[i], (int)i + 1, 0};
                i++;
            } else {
                d[k++] = (struct temper_diff_line){'+', b.at[j], b.len[j], 0, (int)j + 1};
                j++;
            }
        }
        *out = d;
        *n_out = k;
        d = NULL;
    }
    free(d);
    free(lcs);
    lines_free(&a);
    lines_free(&b);
    return err;
}
