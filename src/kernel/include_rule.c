/* include_rule.c: the include rule of a candidate's source. A candidate may include only the
 * toolkit's own headers (for CUDA the few NVRTC-provided ones listed below; for OpenCL none), so
 * that no file of the host can reach the compiler, its log, or any output.
 *
 * The scan is deliberately conservative: it finds every place where any preprocessor could see
 * a directive and refuses what it cannot prove harmless, rather than following one compiler's
 * reading exactly. Backslash-newlines (also with spaces before the newline, which GCC and Clang
 * accept) are removed first; a line ends at \n, \r\n or a lone \r; a directive may begin at the
 * start of every physical line and after every comment's end, and spaces, comments (across lines),
 * control bytes, a byte-order mark and any non-ASCII byte may stand before and after its '#' (or
 * '%:'). So a comment between '#' and `include`, `%:include`, `#inc\` newline `lude`, and an
 * include inside an array initialiser or an `#if 0` are all seen. Trigraphs, `#include` with a macro
 * operand, absolute or `..` paths, `#include_next`, `#import`, `#embed`, `#__include_macros`,
 * `#line` and line markers, and a `#pragma` naming files (over its whole logical line, which a block
 * comment may carry onto the next lines) are refused; the words no source may hold or build by
 * token pasting (`__has_include`, `_Pragma` with a macro operand, inline assembly in OpenCL C) are
 * word_rule.c's, run on the same spliced text. CUDA candidates may also include headers under the
 * toolkit's folders cooperative_groups/, cub/, cuda/ and nv/ by relative path in angle brackets
 * (docs/candidate.md). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernel_internal.h"
#include "util/util.h"
#include "word_rule.h"

/* Headers a CUDA candidate may include: what NVRTC and the toolkit's include folder provide for
 * device code. Nothing else is reachable through an include. */
static const char *const cuda_headers[] = {
    "cuda_fp16.h",       "cuda_bf16.h",        "cuda_fp8.h",
    "cuda_runtime.h",    "vector_types.h",     "vector_functions.h",
    "cooperative_groups.h", "cooperative_groups/reduce.h", "cooperative_groups/memcpy_async.h",
    "cuda_pipeline.h",   "cuda_awbarrier.h",   "mma.h",
    NULL,
};

/* Folders of the toolkit's include path (include and include/cccl, as nvcc and temper's NVRTC
 * give them) whose headers a CUDA candidate may include by a relative path in angle brackets:
 * cooperative groups, cub, libcu++ (cuda/std, cuda/...) and nv/target. Thrust is left out: its
 * headers take include operands from macros a candidate could define. */
static const char *const cuda_folders[] = {"cooperative_groups/", "cub/", "cuda/", "nv/", NULL};

const char *const *temper_allowed_header_folders(enum temper_lang lang)
{
    static const char *const none[] = {NULL};
    return lang == TEMPER_LANG_CUDA ? cuda_folders : none;
}

const char *const *temper_allowed_headers(enum temper_lang lang)
{
    static const char *const none[] = {NULL};
    return lang == TEMPER_LANG_CUDA ? cuda_headers : none;
}

/* The source as the preprocessor sees it after splicing, with each byte's physical line, and
 * the tables that keep the scan linear in the source's length whatever it holds. */
struct spliced {
    char *text;             /* backslash-newlines removed, every line end one '\n'; owned */
    int *line;              /* the physical line (from 1) of each byte of text; owned */
    unsigned char *starts;  /* 1 where a byte begins a physical line; owned */
    uint32_t *next_nl;      /* for each position, the first '\n' at or after it (len if none); owned */
    uint32_t *next_close;   /* for each position, the first "*\/" at or after it (len if none); owned */
    uint32_t *next_word;    /* for each position, the first word a pragma may not hold (word_rule.h:
                             * "include", "dependency", "embed", "module", "__debug") or backslash at
                             * or after it (len if none); owned */
    uint32_t *far_close;    /* for each position, the furthest "*\/" closing a block comment opened at
                             * or after it on its physical line (0 if none); owned */
    uint32_t *memo;         /* skip_blank's result from each position plus 1, 0 if not known; owned */
    unsigned char *seen;    /* 1 at a '#' whose directive has been checked already; owned */
    size_t len;             /* bytes in text */
};

static void spliced_free(struct spliced *s)
{
    free(s->text);
    free(s->line);
    free(s->starts);
    free(s->next_nl);
    free(s->next_close);
    free(s->next_word);
    free(s->far_close);
    free(s->memo);
    free(s->seen);
}

static int is_hspace(unsigned char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\f' || ch == '\v';
}

static int spliced_make(const char *src, size_t len, struct spliced *s)
{
    s->text = malloc(len + 1);
    s->line = malloc((len + 1) * sizeof(int));
    s->starts = malloc(len + 1);
    s->next_nl = malloc((len + 1) * sizeof(uint32_t));
    s->next_close = malloc((len + 2) * sizeof(uint32_t));
    s->next_word = malloc((len + 1) * sizeof(uint32_t));
    s->far_close = malloc((len + 1) * sizeof(uint32_t));
    s->memo = calloc(len + 1, sizeof(uint32_t));
    s->seen = calloc(len + 1, 1);
    s->len = 0;
    if (!s->text || !s->line || !s->starts || !s->next_nl || !s->next_close || !s->next_word || !s->far_close ||
        !s->memo || !s->seen) {
        spliced_free(s);
        return TEMPER_ENOMEM;
    }
    int line = 1, at_start = 1;
    size_t i = 0;
    if (len >= 3 && !memcmp(src, "\xef\xbb\xbf", 3)) /* a byte-order mark, which compilers skip */
        i = 3;
    while (i < len) {
        unsigned char ch = (unsigned char)src[i];
        if (ch == '\\') {
            size_t j = i + 1;
            while (j < len && is_hspace((unsigned char)src[j]))
                j++;
            if (j < len && (src[j] == '\n' || src[j] == '\r')) {
                i = j + (src[j] == '\r' && j + 1 < len && src[j + 1] == '\n' ? 2 : 1);
                line++;
                at_start = 1;
                continue;
            }
        }
        if (ch == '\n' || ch == '\r') {
            i += ch == '\r' && i + 1 < len && src[i + 1] == '\n' ? 2 : 1;
            s->text[s->len] = '\n';
            s->line[s->len] = line;
            s->starts[s->len++] = (unsigned char)at_start;
            line++;
            at_start = 1;
            continue;
        }
        s->text[s->len] = (char)ch;
        s->line[s->len] = line;
        s->starts[s->len++] = (unsigned char)at_start;
        at_start = 0;
        i++;
    }
    s->text[s->len] = 0;
    s->line[s->len] = line;
    s->starts[s->len] = (unsigned char)at_start;
    uint32_t nl = (uint32_t)s->len, close = (uint32_t)s->len, word = (uint32_t)s->len;
    s->next_nl[s->len] = nl;
    s->next_close[s->len] = s->next_close[s->len + 1] = close;
    s->next_word[s->len] = word;
    s->far_close[s->len] = 0;
    for (size_t k = s->len; k-- > 0;) {
        const char *t = s->text + k;
        if (*t == '\n')
            nl = (uint32_t)k;
        if (t[0] == '*' && t[1] == '/')
            close = (uint32_t)k;
        if (*t == '\\' || kernel_pragma_word_at(t))
            word = (uint32_t)k;
        s->next_nl[k] = nl;
        s->next_close[k] = close;
        s->next_word[k] = word;
        uint32_t far = *t == '\n' ? 0 : s->far_close[k + 1];
        if (t[0] == '/' && t[1] == '*' && s->next_close[k + 2] > far)
            far = s->next_close[k + 2];
        s->far_close[k] = far;
    }
    return 0;
}

/* One step of skip_blank from i: the position after a blank byte or a block comment, or i
 * itself where nothing is skipped there. */
static size_t blank_step(const struct spliced *s, size_t i)
{
    unsigned char ch = (unsigned char)s->text[i];
    if (ch == '\n')
        return i;
    if (ch < 0x20 || ch >= 0x7f || ch == ' ')
        return i + 1;
    if (ch == '/' && i + 1 < s->len && s->text[i + 1] == '*') {
        size_t close = s->next_close[i + 2];
        return close >= s->len ? s->len : close + 2;
    }
    return i;
}

/* Skips what may stand between the parts of a directive: spaces, control bytes other than the
 * line end, non-ASCII bytes (Clang takes Unicode spaces for spaces) and block comments, which
 * may run over several lines. Stops at a line end, at a line comment, or at anything else. Every
 * position passed on the way remembers the result, so that the whole scan stays linear. */
static size_t skip_blank(const struct spliced *s, size_t i)
{
    size_t start = i, next;
    while (i < s->len && !s->memo[i] && (next = blank_step(s, i)) != i)
        i = next;
    size_t end = i < s->len && s->memo[i] ? s->memo[i] - 1 : i;
    for (i = start; i < end && !s->memo[i]; i = blank_step(s, i))
        s->memo[i] = (uint32_t)end + 1;
    return end;
}

static int is_ident(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
}

/* Copies n bytes of text for a message (at most 120 shown; temper_show_bytes). */
static void show(const char *text, size_t n, char *out, size_t out_size)
{
    temper_show_bytes(text, n, 120, out, out_size);
}

/* The rest of the logical line from i, for a message. */
static void show_rest(const struct spliced *s, size_t i, char *out, size_t out_size)
{
    show(s->text + i, s->next_nl[i] - i, out, out_size);
}

/* 1 when name (n bytes) is a path under an allowed folder: the folder, then one or more parts
 * of letters, digits, '_', '-' and '.' separated by single '/', no part starting with '.' (so no
 * "..", no hidden files) and no '/' at the end. */
static int folder_header(enum temper_lang lang, const char *name, size_t n)
{
    for (const char *const *f = temper_allowed_header_folders(lang); *f; f++) {
        size_t fl = strlen(*f);
        if (n <= fl || memcmp(name, *f, fl))
            continue;
        int part_start = 1;
        for (size_t i = fl; i < n; i++) {
            unsigned char ch = (unsigned char)name[i];
            if (ch == '/') {
                if (part_start)
                    return 0;
                part_start = 1;
                continue;
            }
            if (part_start && ch == '.')
                return 0;
            if (!is_ident(ch) && ch != '-' && ch != '.')
                return 0;
            part_start = 0;
        }
        return !part_start;
    }
    return 0;
}

/* 1 when the include operand name (n bytes, between open and its closing) is allowed: a listed
 * header in either form, or a header under a listed folder in angle brackets. */
static int header_allowed(enum temper_lang lang, char open, const char *name, size_t n)
{
    for (const char *const *h = temper_allowed_headers(lang); *h; h++)
        if (strlen(*h) == n && !memcmp(*h, name, n))
            return 1;
    return open == '<' && folder_header(lang, name, n);
}

/* Checks the operand of an include at i (after the directive name) and what follows it. */
static int check_include(const struct spliced *s, size_t i, enum temper_lang lang, const char *where,
                         char *msg, size_t msg_size)
{
    char shown[600];
    i = skip_blank(s, i);
    show_rest(s, i, shown, sizeof(shown));
    char open = i < s->len ? s->text[i] : 0;
    char close = open == '<' ? '>' : open == '"' ? '"' : 0;
    const char *name = s->text + i + 1;
    /* No allowed name is near this long: a longer operand is refused without reading it all. */
    size_t room = i < s->len ? s->next_nl[i] - i - 1 : 0;
    const char *end = close ? memchr(name, close, room < 256 ? room : 256) : NULL;
    if (!end)
        return temper_fail(msg, msg_size, TEMPER_EPARSE,
                           "%s: #include %s: the operand must be <name> or \"name\" of a header the toolkit allows "
                           "(a macro, or anything else, is not taken)",
                           where, shown);
    size_t n = (size_t)(end - name);
    if (!header_allowed(lang, open, name, n)) {
        char allowed[600] = "";
        size_t used = 0;
        for (const char *const *h = temper_allowed_headers(lang); *h && used < sizeof(allowed); h++)
            used += (size_t)snprintf(allowed + used, sizeof(allowed) - used, "%s%s", used ? ", " : "", *h);
        for (const char *const *f = temper_allowed_header_folders(lang); *f && used < sizeof(allowed); f++)
            used += (size_t)snprintf(allowed + used, sizeof(allowed) - used, ", <%s...>", *f);
        return temper_fail(msg, msg_size, TEMPER_EPARSE,
                           "%s: #include %s: a candidate may include only the toolkit's own headers (%s: %s)", where,
                           shown, lang == TEMPER_LANG_CUDA ? "CUDA" : "OpenCL", used ? allowed : "none");
    }
    size_t after = skip_blank(s, (size_t)(end - s->text) + 1);
    if (after < s->len && s->text[after] != '\n' && !(s->text[after] == '/' && s->text[after + 1] == '/'))
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: #include %s: text after the header name", where,
                           shown);
    return 0;
}

/* Directives that may begin a logical line; any other name there is refused. */
static const char *const known_directives[] = {
    "define", "undef", "if", "ifdef", "ifndef", "elif", "elifdef", "elifndef", "else", "endif",
    "error", "warning", "pragma", "ident", "sccs", "assert", "unassert", NULL,
};

/* Looks for a directive at position i of the spliced text; logical is 1 where i begins a logical
 * line (where an unknown directive name is also refused). */
static int check_at(const struct spliced *s, size_t i, int logical, enum temper_lang lang, const char *path,
                    char *msg, size_t msg_size)
{
    i = skip_blank(s, i);
    if (i >= s->len)
        return 0;
    size_t hash = i;
    if (s->seen[hash])
        return 0; /* reached again from another comment's end: checked already */
    s->seen[hash] = 1;
    if (s->text[i] == '#')
        i++;
    else if (s->text[i] == '%' && i + 1 < s->len && s->text[i + 1] == ':')
        i += 2;
    else
        return 0;
    char where[TEMPER_PATH_MAX + 32];
    snprintf(where, sizeof(where), "%s:%d", path, s->line[hash]);
    i = skip_blank(s, i);
    size_t name = i;
    while (i < s->len && i - name < 64 && is_ident((unsigned char)s->text[i]))
        i++;
    size_t n = i - name; /* no directive's name is 64 bytes long: a longer one is unknown */
    char shown[600];
#define SHOWN (show_rest(s, hash, shown, sizeof(shown)), shown)
    if (n && s->text[name] >= '0' && s->text[name] <= '9')
        return temper_fail(msg, msg_size, TEMPER_EPARSE,
                           "%s: %s: line markers are not allowed (diagnostics must name the candidate's own lines)",
                           where, SHOWN);
    unsigned char next = i < s->len ? (unsigned char)s->text[i] : 0;
    if (next == '\\' || next == '$' || next >= 0x80)
        return temper_fail(msg, msg_size, TEMPER_EPARSE,
                           "%s: %s: a directive name may hold only letters, digits and '_' (no escapes)", where,
                           SHOWN);
    if (!n)
        return 0;
    char word[32];
    snprintf(word, sizeof(word), "%.*s", (int)(n < sizeof(word) ? n : sizeof(word) - 1), s->text + name);
    if (n == 7 && !memcmp(word, "include", 7))
        return check_include(s, i, lang, where, msg, msg_size);
    if (n == 4 && !memcmp(word, "line", 4))
        return temper_fail(msg, msg_size, TEMPER_EPARSE,
                           "%s: %s: #line is not allowed (diagnostics must name the candidate's own lines)", where,
                           SHOWN);
    if (memmem(s->text + name, n, "include", 7) || memmem(s->text + name, n, "import", 6) ||
        memmem(s->text + name, n, "embed", 5))
        return temper_fail(msg, msg_size, TEMPER_EPARSE,
                           "%s: %s: #%s is not allowed (only #include of a header the toolkit allows)", where, SHOWN,
                           word);
    int known = 0;
    for (const char *const *d = known_directives; *d && !known; d++)
        known = strlen(*d) == n && !memcmp(*d, word, n);
    if (logical && !known)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: %s: unknown preprocessing directive '#%s'", where,
                           SHOWN, word);
    if (known && !strcmp(word, "pragma")) {
        /* The pragma's logical line: its physical line, and the next ones where a block comment
         * opened on it closes (a comment is a space: the directive goes on after it). */
        size_t end = s->next_nl[i];
        for (int hops = 0;; hops++) {
            if (s->next_word[i] < end)
                return temper_fail(msg, msg_size, TEMPER_EPARSE,
                                   "%s: %s: a pragma that names files is not allowed (nor one holding a backslash, "
                                   "which could spell a name)",
                                   where, SHOWN);
            size_t far = s->far_close[i];
            if (far < end || far >= s->len)
                break;
            if (hops == 64)
                return temper_fail(msg, msg_size, TEMPER_EPARSE,
                                   "%s: %s: a pragma carried over more than 64 lines by comments", where, SHOWN);
            i = far + 2;
            end = s->next_nl[i];
        }
    }
    return 0;
#undef SHOWN
}

int temper_candidate_check_includes(enum temper_lang lang, const char *path, const char *source, size_t len,
                                    char *msg, size_t msg_size)
{
    /* Trigraphs come before splicing, and compilers differ on whether they apply (Clang takes
     * them in OpenCL C): ??= is a '#' and ??/ a backslash to some and not to others. */
    int line = 1;
    for (size_t i = 0; i + 2 < len; i++) {
        if (source[i] == '\n' || (source[i] == '\r' && source[i + 1] != '\n'))
            line++;
        if (source[i] == '?' && source[i + 1] == '?' && strchr("=/'()!<>-", source[i + 2]) && source[i + 2])
            return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s:%d: the trigraph '\?\?%c' is not allowed", path,
                               line, source[i + 2]);
    }
    if (len >= UINT32_MAX)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: the source is too large to scan", path);
    struct spliced s;
    int err = spliced_make(source, len, &s);
    if (err)
        return temper_fail(msg, msg_size, err, "%s: out of memory scanning the source", path);
    /* The words no source may hold or build (word_rule.c): the file probes, _Pragma with a macro
     * operand, inline assembly in OpenCL C. */
    err = kernel_check_words(lang, path, s.text, s.line, s.len, msg, msg_size);
    for (size_t i = 0; i < s.len && !err; i++) {
        if (s.starts[i])
            err = check_at(&s, i, i == 0 || s.text[i - 1] == '\n', lang, path, msg, msg_size);
        if (!err && s.text[i] == '*' && i + 1 < s.len && s.text[i + 1] == '/')
            err = check_at(&s, i + 2, 0, lang, path, msg, msg_size);
    }
    spliced_free(&s);
    return err;
}
