/* word_rule.c: the word rule of a candidate's source: words no candidate may hold, nor build by
 * token pasting. The include rule (include_rule.c) keeps the host's files away from the compiler's
 * directives; this rule keeps them away from its expressions and operators, and keeps native code
 * out of OpenCL C:
 *   - `__has_include` (and `__has_include_next`), `__has_embed` and libcu++'s `_CCCL_HAS_INCLUDE`
 *     test whether a host file exists; refused anywhere, as part of any word;
 *   - `_Pragma` is taken only as `_Pragma("...")` with a plain string literal naming no refused
 *     pragma (a macro operand, `#x` included, could build `GCC dependency "/etc/passwd"`); MSVC's
 *     `__pragma` and libcu++'s `_CCCL_PRAGMA`, which take any tokens, are refused;
 *   - in OpenCL C, `asm`, `__asm` and `__asm__`: on a CPU device (PoCL) a kernel is native code in
 *     the evaluating process, and inline assembly makes system calls. CUDA's inline PTX runs on the
 *     GPU and stays allowed.
 * Token pasting (`##`, `%:%:`) can build any of these from pieces the words above never show
 * (`#define H(x) __has_##x`, then `H(include)`). Every identifier a paste produces is the
 * concatenation of identifier tokens of the source (or of the few that predefined macros expand
 * to), so where the source pastes at all, the rule refuses it when a refused word can be spelt
 * as a concatenation of two or more of its identifiers. The pieces are gathered everywhere
 * (comments and strings too), which errs on the side of refusing. Universal character names
 * (`\u0061`, `\U00000061`, `\u{61}`) are read as the character they name, and named ones (`\N{...}`)
 * are refused, so that no spelling of a word escapes the scan. Plain `asm` is left to the build
 * (temper defines `asm` away for OpenCL builds): it is a keyword only in C++ for OpenCL, and its
 * pieces (a, s, m) are names that honest kernels use. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"
#include "word_rule.h"

/* Words a pragma may not hold: those that read or name files (GCC dependency, include_alias,
 * clang module import and the module lookups of clang __debug), and embed. */
static const char *const pragma_words[] = {"include", "dependency", "embed", "module", "__debug", NULL};

int kernel_pragma_word_at(const char *text)
{
    for (const char *const *w = pragma_words; *w; w++)
        if (!strncmp(text, *w, strlen(*w)))
            return 1;
    return 0;
}

int kernel_pragma_refused(const char *text, size_t n)
{
    for (const char *const *w = pragma_words; *w; w++)
        if (memmem(text, n, *w, strlen(*w)))
            return 1;
    return 0;
}

/* Words refused as part of any identifier: they probe the host's files. */
static const char *const probes[] = {"__has_include", "__has_embed", "_CCCL_HAS_INCLUDE", NULL};

/* Words that token pasting may not build, and the languages they are refused in. */
enum { IN_CUDA = 1, IN_OPENCL = 2, IN_BOTH = 3 };
static const struct {
    const char *word; /* the identifier */
    int langs;        /* IN_* */
} pasted[] = {
    {"__has_include", IN_BOTH}, {"__has_include_next", IN_BOTH}, {"__has_include__", IN_BOTH},
    {"__has_embed", IN_BOTH},   {"_CCCL_HAS_INCLUDE", IN_BOTH},  {"_CCCL_PRAGMA", IN_BOTH},
    {"_Pragma", IN_BOTH},       {"__pragma", IN_BOTH},           {"__asm", IN_OPENCL},
    {"__asm__", IN_OPENCL},
};
#define NPASTED (sizeof(pasted) / sizeof(pasted[0]))
#define WORD_MAX 24 /* longer than any word of pasted */

/* Identifiers that predefined macros expand to (type names and integer suffixes: __SIZE_TYPE__,
 * __INT64_C_SUFFIX__, ...): pieces a paste may take without the source naming them. */
static const char *const predefined_pieces[] = {"int", "long", "unsigned", "signed", "short", "char", "float",
                                                "double", "void", "L", "U", "UL", "ULL", "LL", "u", "l", NULL};

/* The spliced text with universal character names read: each one naming a letter, a digit or '_'
 * is that character, any other is 0x01 (part of no word). */
struct folded {
    char *text; /* NUL-terminated; owned */
    int *line;  /* the physical line of each byte; owned */
    size_t len; /* bytes in text */
};

static int is_ident(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
}

static int hex_value(unsigned char ch)
{
    return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
}

/* The universal character name at text[i] (a backslash): its code point and length, or 0 when
 * there is none there. */
static size_t read_ucn(const char *text, size_t len, size_t i, uint32_t *value)
{
    if (i + 1 >= len || (text[i + 1] != 'u' && text[i + 1] != 'U'))
        return 0;
    size_t j = i + 2, digits = text[i + 1] == 'u' ? 4 : 8;
    int braced = text[i + 1] == 'u' && j < len && text[j] == '{';
    uint32_t v = 0;
    size_t n = 0;
    j += braced;
    while (j < len && hex_value((unsigned char)text[j]) >= 0 && (braced ? n < 9 : n < digits)) {
        v = v * 16 + (uint32_t)hex_value((unsigned char)text[j]);
        j++;
        n++;
    }
    if (braced ? !n || j >= len || text[j] != '}' : n != digits)
        return 0;
    *value = v;
    return j + braced - i;
}

static void folded_free(struct folded *f)
{
    free(f->text);
    free(f->line);
}

/* Folds text; a named character escape (\N{...}) is refused with its line in *bad_line. */
static int folded_make(const char *text, const int *line, size_t len, struct folded *f, int *bad_line)
{
    f->text = malloc(len + 1);
    f->line = malloc((len + 1) * sizeof(int));
    f->len = 0;
    *bad_line = 0;
    if (!f->text || !f->line) {
        folded_free(f);
        return TEMPER_ENOMEM;
    }
    for (size_t i = 0; i < len;) {
        uint32_t v;
        size_t n = text[i] == '\\' ? read_ucn(text, len, i, &v) : 0;
        if (!n && text[i] == '\\' && i + 2 < len && text[i + 1] == 'N' && text[i + 2] == '{' && !*bad_line)
            *bad_line = line[i];
        f->line[f->len] = line[i];
        f->text[f->len++] = n ? (v < 0x80 && is_ident((unsigned char)v) ? (char)v : '\x01') : text[i];
        i += n ? n : 1;
    }
    f->text[f->len] = 0;
    f->line[f->len] = len ? line[len - 1] : 1;
    return 0;
}

/* Checks a _Pragma at f->text[i] (just after the word): it must be followed by ("...") with only
 * spaces between, the string holding no escape but \" and no refused pragma. */
static int check_pragma_operator(const struct folded *f, size_t i, const char *path, int at_line, char *msg,
                                 size_t msg_size)
{
    const char *t = f->text;
    while (t[i] == ' ' || t[i] == '\t')
        i++;
    int ok = t[i] == '(';
    i += ok;
    while (ok && (t[i] == ' ' || t[i] == '\t'))
        i++;
    ok = ok && t[i] == '"';
    size_t start = ++i;
    int escapes = 0;
    while (ok && t[i] && t[i] != '"' && t[i] != '\n') {
        if (t[i] == '\\') {
            escapes |= t[i + 1] != '"';
            i++;
        }
        i += t[i] != 0;
    }
    size_t end = i;
    ok = ok && t[i] == '"';
    i += ok;
    while (ok && (t[i] == ' ' || t[i] == '\t'))
        i++;
    ok = ok && t[i] == ')';
    if (!ok)
        return temper_fail(msg, msg_size, TEMPER_EPARSE,
                           "%s:%d: _Pragma must be written _Pragma(\"...\") with a plain string literal (a macro "
                           "operand could build a pragma that reads the host's files)",
                           path, at_line);
    if (escapes)
        return temper_fail(msg, msg_size, TEMPER_EPARSE,
                           "%s:%d: _Pragma(\"...\"): no escape but \\\" is allowed in the string (an escape could "
                           "spell a refused pragma)",
                           path, at_line);
    if (kernel_pragma_refused(t + start, end - start)) {
        char shown[200];
        temper_show_bytes(t + start, end - start, 120, shown, sizeof(shown));
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s:%d: _Pragma(\"%s\"): a pragma that names files is not allowed",
                           path, at_line, shown);
    }
    return 0;
}

/* Where the pieces of one pasted word were seen: seen[a][b] is the line of the first identifier
 * spelling word[a, b), 0 where none does. */
struct pieces {
    int seen[WORD_MAX + 1][WORD_MAX + 1];
};

static void note_piece(struct pieces *p, const char *word, const char *run, size_t n, int line)
{
    size_t wl = strlen(word);
    for (size_t a = 0; n <= wl && a + n <= wl; a++)
        if (!memcmp(word + a, run, n) && !p->seen[a][a + n])
            p->seen[a][a + n] = line;
}

/* Whether word is a concatenation of two or more pieces; the split goes to cut[] (piece k is
 * word[cut[k], cut[k + 1])) and its count to *ncut. */
static int spelt_by_pieces(const struct pieces *p, const char *word, size_t cut[WORD_MAX + 1], int *ncut)
{
    size_t wl = strlen(word);
    int from[WORD_MAX + 1];
    for (size_t i = 0; i <= wl; i++)
        from[i] = -1;
    from[0] = 0;
    for (size_t a = 0; a < wl; a++)
        for (size_t b = a + 1; from[a] >= 0 && b <= wl; b++)
            if (p->seen[a][b] && from[b] < 0 && !(a == 0 && b == wl))
                from[b] = (int)a;
    if (from[wl] < 0)
        return 0;
    size_t rev[WORD_MAX + 1];
    int n = 0;
    for (size_t at = wl; at > 0; at = (size_t)from[at])
        rev[n++] = at;
    rev[n++] = 0;
    for (int k = 0; k < n; k++)
        cut[k] = rev[n - 1 - k];
    *ncut = n;
    return 1;
}

int kernel_check_words(enum temper_lang lang, const char *path, const char *text, const int *line, size_t len,
                       char *msg, size_t msg_size)
{
    struct folded f;
    int bad_line;
    if (folded_make(text, line, len, &f, &bad_line))
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "%s: out of memory scanning the source", path);
    int err = 0;
    if (bad_line)
        err = temper_fail(msg, msg_size, TEMPER_EPARSE,
                          "%s:%d: a named character escape (\\N{...}) is not allowed (it could spell a refused word)",
                          path, bad_line);
    for (int p = 0; probes[p] && !err; p++) {
        const char *at = memmem(f.text, f.len, probes[p], strlen(probes[p]));
        if (at)
            err = temper_fail(msg, msg_size, TEMPER_EPARSE, "%s:%d: %s is not allowed (it probes the host's files)",
                              path, f.line[at - f.text], probes[p]);
    }
    int mask = lang == TEMPER_LANG_CUDA ? IN_CUDA : IN_OPENCL;
    const char *paste = memmem(f.text, f.len, "##", 2), *digraph = memmem(f.text, f.len, "%:%:", 4);
    if (!paste || (digraph && digraph < paste))
        paste = digraph;
    struct pieces *pc = paste ? calloc(NPASTED, sizeof(*pc)) : NULL;
    if (paste && !pc)
        err = err ? err : temper_fail(msg, msg_size, TEMPER_ENOMEM, "%s: out of memory scanning the source", path);
    for (size_t i = 0; i < f.len && !err;) {
        if (!is_ident((unsigned char)f.text[i])) {
            i++;
            continue;
        }
        size_t start = i;
        while (i < f.len && is_ident((unsigned char)f.text[i]))
            i++;
        const char *run = f.text + start;
        size_t n = i - start;
        int at_line = f.line[start];
#define RUN_IS(w) (n == sizeof(w) - 1 && !memcmp(run, w, n))
        if (lang == TEMPER_LANG_OPENCL && (RUN_IS("asm") || RUN_IS("__asm") || RUN_IS("__asm__")))
            err = temper_fail(msg, msg_size, TEMPER_EPARSE,
                              "%s:%d: inline assembly ('%.*s') is not allowed in OpenCL C (on a CPU device the kernel "
                              "runs as native code in the evaluating process)",
                              path, at_line, (int)n, run);
        else if (RUN_IS("__pragma") || RUN_IS("_CCCL_PRAGMA"))
            err = temper_fail(msg, msg_size, TEMPER_EPARSE,
                              "%s:%d: %.*s is not allowed (it makes a pragma of any tokens); write "
                              "_Pragma(\"...\") with a string literal",
                              path, at_line, (int)n, run);
        else if (RUN_IS("_Pragma"))
            err = check_pragma_operator(&f, i, path, at_line, msg, msg_size);
#undef RUN_IS
        for (size_t w = 0; pc && w < NPASTED && n <= WORD_MAX; w++)
            note_piece(&pc[w], pasted[w].word, run, n, at_line);
    }
    for (size_t w = 0; pc && !err && w < NPASTED; w++) {
        if (!(pasted[w].langs & mask))
            continue;
        for (const char *const *q = predefined_pieces; *q; q++)
            note_piece(&pc[w], pasted[w].word, *q, strlen(*q), -1);
        size_t cut[WORD_MAX + 1];
        int ncut = 0;
        if (!spelt_by_pieces(&pc[w], pasted[w].word, cut, &ncut))
            continue;
        char parts[512];
        size_t used = 0;
        for (int k = 0; k + 1 < ncut && used < sizeof(parts); k++) {
            int l = pc[w].seen[cut[k]][cut[k + 1]];
            char where[32] = " (a predefined macro)";
            if (l > 0)
                snprintf(where, sizeof(where), " (line %d)", l);
            used += (size_t)snprintf(parts + used, sizeof(parts) - used, "%s'%.*s'%s", k ? " + " : "",
                                     (int)(cut[k + 1] - cut[k]), pasted[w].word + cut[k], where);
        }
        err = temper_fail(msg, msg_size, TEMPER_EPARSE,
                          "%s:%d: token pasting ('%s') could build %s from identifiers of the source: %s; %s is not "
                          "allowed, written or pasted (rename those identifiers or do without pasting)",
                          path, f.line[paste - f.text], paste[0] == '#' ? "##" : "%:%:", pasted[w].word, parts,
                          pasted[w].word);
    }
    free(pc);
    folded_free(&f);
    return err;
}
