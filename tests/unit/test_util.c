/* test_util.c: unit tests of util.h and error.h: bounded buffers, files and folders, the data
 * folders, child processes with time limits, the random number generator, hashing and errors.
 * Tests that touch files work in a fresh folder under /tmp with TEMPER_HOME and TEMPER_CACHE
 * pointing into it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dirent.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "temper/error.h"
#include "util/seal.h"
#include "util/util.h"

#include "unit.h"

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

/* ---- buffers ---- */

/* Two appends into a buffer of max_bytes, and what must come of them. */
struct buf_case {
    size_t max_bytes;   /* the buffer's limit */
    const char *first;  /* appended first */
    int first_err;      /* its result */
    const char *second; /* appended next */
    int second_err;     /* its result */
    const char *want;   /* the buffer's text afterwards */
};

static void test_buf_limits(void **state)
{
    (void)state;
    static const struct buf_case cases[] = {
        {8, "abcd", 0, "efgh", 0, "abcdefgh"},             /* exactly the maximum */
        {8, "abcd", 0, "efghi", TEMPER_ERANGE, "abcd"},    /* one past: refused, nothing added */
        {8, "abcdefghi", TEMPER_ERANGE, "ab", 0, "ab"},    /* a refused append leaves it usable */
        {0, "", 0, "a", TEMPER_ERANGE, ""},
        {3, "", 0, "xyz", 0, "xyz"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct temper_buf b;
        temper_buf_init(&b, cases[i].max_bytes);
        assert_null(b.data);
        assert_int_equal(temper_buf_append(&b, cases[i].first, strlen(cases[i].first)), cases[i].first_err);
        assert_int_equal(temper_buf_append(&b, cases[i].second, strlen(cases[i].second)), cases[i].second_err);
        assert_non_null(b.data);
        assert_int_equal(b.len, strlen(cases[i].want));
        assert_memory_equal(b.data, cases[i].want, b.len + 1); /* includes the terminating NUL */
        assert_true(b.len <= b.max_bytes);
        temper_buf_free(&b);
        assert_null(b.data);
        assert_int_equal(b.len, 0);
    }
}

static void test_buf_printf_and_growth(void **state)
{
    (void)state;
    struct temper_buf b;
    temper_buf_init(&b, 4096);
    assert_int_equal(temper_buf_printf(&b, "%d-%s", 42, "x"), 0);
    assert_string_equal(b.data, "42-x");
    assert_int_equal(b.len, 4);
    char big[1000];
    memset(big, 'q', sizeof(big));
    assert_int_equal(temper_buf_append(&b, big, sizeof(big)), 0); /* past the first allocation */
    assert_int_equal(b.len, 1004);
    assert_int_equal(b.data[1004], 0);
    assert_int_equal(b.data[1003], 'q');
    assert_true(b.cap >= 1005);
    assert_int_equal(temper_buf_printf(&b, "%s", ""), 0);
    assert_int_equal(b.len, 1004);
    temper_buf_free(&b);

    /* printf past the maximum is refused and leaves the text as it was. */
    temper_buf_init(&b, 10);
    assert_int_equal(temper_buf_printf(&b, "%s", "hello"), 0);
    assert_int_equal(temper_buf_printf(&b, "%s", "world!"), TEMPER_ERANGE);
    assert_string_equal(b.data, "hello");
    assert_int_equal(b.len, 5);
    assert_int_equal(temper_buf_printf(&b, "%05d", 7), 0);
    assert_string_equal(b.data, "hello00007");
    temper_buf_free(&b);
}

/* ---- files ---- */

static void test_read_file(void **state)
{
    const char *dir = *state;
    char path[4096], msg[512];
    char *text = (char *)1;
    size_t len = 99;

    snprintf(path, sizeof(path), "%s/missing.txt", dir);
    assert_int_equal(temper_read_file(path, 100, &text, &len, msg, sizeof(msg)), TEMPER_ENOTFOUND);
    assert_contains(msg, path);

    snprintf(path, sizeof(path), "%s/ten.txt", dir);
    write_text(path, "0123456789");
    /* Table: limit -> result. */
    static const struct {
        size_t max_bytes; /* the limit */
        int err;          /* the result */
    } limits[] = {{10, 0}, {11, 0}, {1 << 20, 0}, {9, TEMPER_ERANGE}, {0, TEMPER_ERANGE}};
    for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
        text = NULL;
        msg[0] = 0;
        int err = temper_read_file(path, limits[i].max_bytes, &text, &len, msg, sizeof(msg));
        assert_int_equal(err, limits[i].err);
        if (err) {
            char want[64];
            snprintf(want, sizeof(want), "larger than %zu bytes", limits[i].max_bytes);
            assert_contains(msg, want);
            assert_contains(msg, path);
            continue;
        }
        assert_int_equal(len, 10);
        assert_memory_equal(text, "0123456789", 11);
        free(text);
    }

    /* An empty file reads as an empty string, not NULL; len is optional. */
    snprintf(path, sizeof(path), "%s/empty.txt", dir);
    write_text(path, "");
    text = NULL;
    assert_int_equal(temper_read_file(path, 10, &text, NULL, msg, sizeof(msg)), 0);
    assert_non_null(text);
    assert_string_equal(text, "");
    free(text);

    /* A folder is not a readable file. */
    assert_true(temper_read_file(dir, 100, &text, &len, msg, sizeof(msg)) < 0);
}

static int count_entries(const char *dir, const char *containing)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && (!containing || strstr(e->d_name, containing)))
            n++;
    closedir(d);
    return n;
}

static void test_write_file_atomic(void **state)
{
    const char *dir = *state;
    char path[4096], folder[2048], msg[512];
    snprintf(folder, sizeof(folder), "%s/a/b/c", dir);
    snprintf(path, sizeof(path), "%s/out.bin", folder);
    const char data[] = "first\0with a NUL";
    assert_int_equal(temper_write_file_atomic(path, data, sizeof(data), msg, sizeof(msg)), 0);
    char *text;
    size_t len;
    assert_int_equal(temper_read_file(path, 1000, &text, &len, msg, sizeof(msg)), 0);
    assert_int_equal(len, sizeof(data));
    assert_memory_equal(text, data, sizeof(data));
    free(text);
    assert_int_equal(count_entries(folder, NULL), 1); /* no temporary file left */

    /* Overwriting replaces the whole content. */
    assert_int_equal(temper_write_file_atomic(path, "2nd", 3, msg, sizeof(msg)), 0);
    assert_int_equal(temper_read_file(path, 1000, &text, &len, msg, sizeof(msg)), 0);
    assert_int_equal(len, 3);
    assert_string_equal(text, "2nd");
    free(text);
    assert_int_equal(count_entries(folder, NULL), 1);
    assert_int_equal(count_entries(folder, ".tmp"), 0);

    /* A parent that is a file cannot be created: an error, and no file appears. */
    char blocked[4200];
    snprintf(blocked, sizeof(blocked), "%s/out.bin/inside.txt", folder);
    assert_int_equal(temper_write_file_atomic(blocked, "x", 1, msg, sizeof(msg)), TEMPER_EIO);
    assert_int_equal(count_entries(folder, NULL), 1);
}

static void test_mkdirs_and_dirname(void **state)
{
    const char *dir = *state;
    char path[4096];
    snprintf(path, sizeof(path), "%s/x/y/z", dir);
    assert_int_equal(temper_mkdirs(path), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(temper_mkdirs(path), 0); /* already there */

    static const struct {
        const char *path; /* input */
        const char *want; /* its folder */
    } cases[] = {
        {"a/b/c", "a/b"}, {"file", "."}, {"/x", "/"}, {"/a/b", "/a"}, {"a/", "a"}, {"", "."},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[64];
        temper_dirname(cases[i].path, out, sizeof(out));
        if (strcmp(out, cases[i].want))
            fail_msg("dirname('%s') = '%s', want '%s'", cases[i].path, out, cases[i].want);
    }
}

static void test_data_folders(void **state)
{
    (void)state;
    /* Table: environment -> folders. NULL unsets a variable. */
    static const struct {
        const char *temper_home, *xdg_data, *temper_cache, *xdg_cache, *home; /* the environment */
        const char *want_home, *want_cache;                                    /* the folders */
    } cases[] = {
        {"/th", "/xd", "/tc", "/xc", "/h", "/th", "/tc"},
        {NULL, "/xd", NULL, "/xc", "/h", "/xd/temper", "/xc/temper"},
        {"", "", "", "", "/h", "/h/.local/share/temper", "/h/.cache/temper"},
        {NULL, NULL, NULL, NULL, "/h", "/h/.local/share/temper", "/h/.cache/temper"},
    };
    const char *names[] = {"TEMPER_HOME", "XDG_DATA_HOME", "TEMPER_CACHE", "XDG_CACHE_HOME", "HOME"};
    char *saved[5];
    for (int v = 0; v < 5; v++)
        saved[v] = getenv(names[v]) ? strdup(getenv(names[v])) : NULL;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *values[] = {cases[i].temper_home, cases[i].xdg_data, cases[i].temper_cache, cases[i].xdg_cache,
                                cases[i].home};
        for (int v = 0; v < 5; v++)
            values[v] ? setenv(names[v], values[v], 1) : unsetenv(names[v]);
        char home[4096], cache[4096];
        assert_string_equal(temper_home_dir(home, sizeof(home)), cases[i].want_home);
        assert_string_equal(temper_cache_dir(cache, sizeof(cache)), cases[i].want_cache);
    }
    for (int v = 0; v < 5; v++) {
        saved[v] ? setenv(names[v], saved[v], 1) : unsetenv(names[v]);
        free(saved[v]);
    }
}

/* ---- child processes ---- */

static void test_proc_output_and_exit_code(void **state)
{
    (void)state;
    static const struct {
        const char *script; /* run with sh -c */
        int exit_code;      /* its exit status */
        const char *output; /* everything it printed */
    } cases[] = {
        {"echo hi; exit 3", 3, "hi\n"},
        {"echo out; echo err >&2", 0, "out\nerr\n"},
        {"printf abc", 0, "abc"},
        {"exit 0", 0, ""},
        {"cat; echo end", 0, "end\n"}, /* stdin is /dev/null, so cat ends at once */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *argv[] = {"sh", "-c", (char *)cases[i].script, NULL};
        struct temper_proc_result r;
        char msg[256];
        assert_int_equal(temper_proc_run(argv, 10, 1 << 16, &r, msg, sizeof(msg)), 0);
        assert_int_equal(r.exit_code, cases[i].exit_code);
        assert_int_equal(r.signal, 0);
        assert_int_equal(r.timed_out, 0);
        assert_non_null(r.output);
        assert_string_equal(r.output, cases[i].output);
        free(r.output);
    }
}

/* Whether a process exists and is not a zombie waiting to be reaped. */
static int process_alive(int pid)
{
    char path[64], stat_text[256] = "";
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(stat_text, 1, sizeof(stat_text) - 1, f);
    fclose(f);
    stat_text[n] = 0;
    const char *paren = strrchr(stat_text, ')');
    return paren && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
}

static void test_proc_timeout(void **state)
{
    (void)state;
    char *argv[] = {"sleep", "5", NULL};
    struct temper_proc_result r;
    char msg[256];
    double start = temper_now_s();
    assert_int_equal(temper_proc_run(argv, 0.3, 1024, &r, msg, sizeof(msg)), 0);
    double took = temper_now_s() - start;
    assert_int_equal(r.timed_out, 1);
    assert_int_equal(r.exit_code, -1);
    assert_int_equal(r.signal, SIGKILL);
    if (took < 0.25 || took > 2.0)
        fail_msg("a 0.3 s limit took %.2f s", took);
    free(r.output);

    /* The whole process group goes: the shell's child is killed too. */
    char *argv2[] = {"sh", "-c", "sleep 5 & echo $!; wait", NULL};
    start = temper_now_s();
    assert_int_equal(temper_proc_run(argv2, 0.3, 1024, &r, msg, sizeof(msg)), 0);
    took = temper_now_s() - start;
    assert_int_equal(r.timed_out, 1);
    if (took > 2.0)
        fail_msg("a 0.3 s limit took %.2f s", took);
    int child = atoi(r.output);
    free(r.output);
    assert_true(child > 1);
    while (process_alive(child) && temper_now_s() - start < 3)
        usleep(10000);
    if (process_alive(child))
        fail_msg("the shell's child %d still runs after the time limit", child);
}

static void test_proc_output_limit_and_missing_program(void **state)
{
    (void)state;
    char *argv[] = {"sh", "-c", "i=0; while [ $i -lt 2000 ]; do echo 0123456789; i=$((i+1)); done; exit 5", NULL};
    struct temper_proc_result r;
    char msg[256];
    assert_int_equal(temper_proc_run(argv, 20, 1000, &r, msg, sizeof(msg)), 0);
    assert_int_equal(r.exit_code, 5); /* read to the end although only 1000 bytes are kept */
    assert_int_equal(strlen(r.output), 1000);
    assert_memory_equal(r.output, "0123456789\n0123456789\n", 22);
    free(r.output);

    char *missing[] = {"/nonexistent/temper-no-such-program", NULL};
    assert_int_equal(temper_proc_run(missing, 5, 1000, &r, msg, sizeof(msg)), 0);
    assert_int_equal(r.exit_code, 127);
    assert_contains(r.output, "cannot run /nonexistent/temper-no-such-program");
    free(r.output);

    char *killed[] = {"sh", "-c", "kill -TERM $$", NULL};
    assert_int_equal(temper_proc_run(killed, 5, 1000, &r, msg, sizeof(msg)), 0);
    assert_int_equal(r.exit_code, -1);
    assert_int_equal(r.signal, SIGTERM);
    assert_int_equal(r.timed_out, 0);
    free(r.output);
}

/* ---- random numbers ---- */

static void test_rng(void **state)
{
    (void)state;
    /* xoshiro256** seeded with splitmix64: first outputs from an independent implementation. */
    static const struct {
        uint64_t seed;      /* the seed */
        uint64_t first[3];  /* the first three outputs */
    } known[] = {
        {0, {0x99ec5f36cb75f2b4ull, 0xbf6e1f784956452aull, 0x1a5f849d4933e6e0ull}},
        {42, {0x15780b2e0c2ec716ull, 0x6104d9866d113a7eull, 0xae17533239e499a1ull}},
    };
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        struct temper_rng r;
        temper_rng_seed(&r, known[i].seed);
        for (int k = 0; k < 3; k++) {
            uint64_t v = temper_rng_next(&r);
            if (v != known[i].first[k])
                fail_msg("seed %llu output %d = 0x%016llx, want 0x%016llx", (unsigned long long)known[i].seed, k,
                         (unsigned long long)v, (unsigned long long)known[i].first[k]);
        }
    }

    /* Same seed, same sequence; different seeds, different sequences. */
    struct temper_rng a, b, c;
    temper_rng_seed(&a, 1234);
    temper_rng_seed(&b, 1234);
    temper_rng_seed(&c, 1235);
    int same = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t va = temper_rng_next(&a), vb = temper_rng_next(&b), vc = temper_rng_next(&c);
        assert_true(va == vb);
        same += va == vc;
    }
    assert_int_equal(same, 0);

    /* uniform is in [0, 1) with mean 1/2; normal has mean 0 and deviation 1. */
    temper_rng_seed(&a, 7);
    double sum = 0, lo = 1, hi = 0;
    for (int i = 0; i < 100000; i++) {
        double u = temper_rng_uniform(&a);
        assert_true(u >= 0.0 && u < 1.0);
        sum += u;
        lo = u < lo ? u : lo;
        hi = u > hi ? u : hi;
    }
    assert_true(fabs(sum / 100000 - 0.5) < 0.01);
    assert_true(lo < 0.001 && hi > 0.999);
    /* The normal's moments, and how often it lands beyond 1, 2 and the ziggurat's tail (3.4426):
     * a wrong strip table or tail shows in these frequencies (expected 317311, 45500 and 576 of
     * 10^6; the bounds are about five standard deviations). */
    double s1 = 0, s2 = 0, s4 = 0;
    int beyond1 = 0, beyond2 = 0, tail = 0, n = 1000000;
    for (int i = 0; i < n; i++) {
        double z = temper_rng_normal(&a);
        assert_true(isfinite(z));
        s1 += z;
        s2 += z * z;
        s4 += z * z * z * z;
        beyond1 += fabs(z) > 1;
        beyond2 += fabs(z) > 2;
        tail += fabs(z) > 3.442619855899;
    }
    double mean = s1 / n, var = s2 / n - mean * mean, kurt = s4 / n;
    if (fabs(mean) > 0.006 || fabs(var - 1) > 0.008 || fabs(kurt - 3) > 0.06)
        fail_msg("normal: mean %g, variance %g, fourth moment %g", mean, var, kurt);
    if (abs(beyond1 - 317311) > 2400 || abs(beyond2 - 45500) > 1050 || abs(tail - 576) > 120)
        fail_msg("normal: %d beyond 1, %d beyond 2, %d beyond 3.4426 of %d", beyond1, beyond2, tail, n);

    /* Seeding again starts the same sequence. */
    temper_rng_seed(&a, 5);
    double first = temper_rng_normal(&a), second = temper_rng_normal(&a);
    temper_rng_seed(&a, 5);
    (void)temper_rng_normal(&a);
    temper_rng_seed(&a, 5);
    assert_true(temper_rng_normal(&a) == first);
    assert_true(temper_rng_normal(&a) == second);
    assert_true(first != second);

    assert_true(temper_secret_seed() != temper_secret_seed());
}

/* ---- hashing, clocks, errors ---- */

static void test_hash(void **state)
{
    (void)state;
    static const struct {
        uint64_t h;       /* a hash */
        const char *want; /* its text */
    } cases[] = {
        {0, "0000000000000000"},
        {1, "0000000000000001"},
        {0xdeadbeefull, "00000000deadbeef"},
        {0x0123456789abcdefull, "0123456789abcdef"},
        {UINT64_MAX, "ffffffffffffffff"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[17];
        memset(out, 'x', sizeof(out));
        temper_hash_hex(cases[i].h, out);
        assert_int_equal(out[16], 0);
        assert_string_equal(out, cases[i].want);
    }
    /* XXH3 64-bit of the empty input with seed 0, as in xxHash's own sanity table. */
    assert_true(temper_hash64("", 0, 0) == 0x2D06800538D394C2ull);
    /* Stable across runs and builds (hashes name files in the cache): XXH3 64-bit of "abc", seed 0,
     * and it depends on the bytes, not on where they are. */
    char abc[] = {'a', 'b', 'c', 'x'};
    assert_true(temper_hash64(abc, 3, 0) == 0x78AF5F94892F3950ull);
    assert_true(temper_hash64(abc, 3, 0) == temper_hash64("abc", 3, 0));
    assert_true(temper_hash64("abc", 3, 0) != temper_hash64("abc", 3, 1));
    assert_true(temper_hash64("abc", 3, 0) != temper_hash64("abd", 3, 0));
    assert_true(temper_hash64("abc", 3, 0) != temper_hash64("abc", 2, 0));
}

/* A 64-bit little-endian ELF image of a header, sections (name, type, contents) and a section
 * header table, with a string table holding the names; returns its size. */
struct elf_section {
    const char *name;
    uint32_t type;
    const char *data;
};

static void put(unsigned char *b, size_t at, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        b[at + (size_t)i] = (unsigned char)(v >> (8 * i));
}

static size_t make_elf(unsigned char *b, size_t cap, const struct elf_section *sec, int n)
{
    memset(b, 0, cap);
    memcpy(b, "\x7f" "ELF\x02\x01\x01", 7);
    size_t at = 64, name_at[8], data_at[8];
    char names[256] = "";
    size_t names_len = 1; /* index 0: the empty name */
    for (int i = 0; i < n; i++) {
        name_at[i] = names_len;
        memcpy(names + names_len, sec[i].name, strlen(sec[i].name) + 1);
        names_len += strlen(sec[i].name) + 1;
        data_at[i] = at;
        memcpy(b + at, sec[i].data, strlen(sec[i].data));
        at += strlen(sec[i].data);
    }
    size_t strtab_at = at, strtab_name = names_len;
    memcpy(names + names_len, ".shstrtab", 10);
    names_len += 10;
    memcpy(b + at, names, names_len);
    at += names_len;
    at = (at + 7) & ~(size_t)7;
    put(b, 0x28, at, 8);     /* e_shoff */
    put(b, 0x3a, 64, 2);     /* e_shentsize */
    put(b, 0x3c, n + 2, 2);  /* e_shnum: the null section, the sections, the string table */
    put(b, 0x3e, n + 1, 2);  /* e_shstrndx */
    size_t sh = at + 64;     /* section 0 stays all zeros */
    for (int i = 0; i < n; i++, sh += 64) {
        put(b, sh, name_at[i], 4);
        put(b, sh + 4, sec[i].type, 4);
        put(b, sh + 24, data_at[i], 8);
        put(b, sh + 32, strlen(sec[i].data), 8);
    }
    put(b, sh, strtab_name, 4);
    put(b, sh + 4, 3, 4); /* SHT_STRTAB */
    put(b, sh + 24, strtab_at, 8);
    put(b, sh + 32, names_len, 8);
    assert_true(sh + 64 <= cap);
    return sh + 64;
}

/* The code hash ignores what a compiler notes about itself, and nothing else. */
static void test_code_hash(void **state)
{
    (void)state;
    enum { NOTE = 7, PROGBITS = 1, NOBITS = 8 };
    unsigned char a[2048], b[2048];
    struct elf_section base[] = {{".text.k", PROGBITS, "SASS-1"}, {".note.nv.tkinfo", NOTE, "-O3 --maxrregcount=32"},
                                 {".nv.info.k", PROGBITS, "REGCOUNT 80"}, {".nv.shared.k", NOBITS, "xxxx"}};
    size_t na = make_elf(a, sizeof(a), base, 4);
    uint64_t h = temper_code_hash(a, na);
    assert_true(h == temper_code_hash(a, na));
    assert_true(h != temper_hash64(a, na, 0)); /* parsed as ELF, not hashed whole */

    struct {
        const char *why;          /* what differs */
        int section;              /* which section of base changes */
        struct elf_section now;   /* into what */
        int same;                 /* 1 if the code hash must not change */
    } cases[] = {
        {"only the compiler's note", 1, {".note.nv.tkinfo", NOTE, "-O3 --maxrregcount=64"}, 1},
        {"the code", 0, {".text.k", PROGBITS, "SASS-2"}, 0},
        {"the kernel's attributes", 2, {".nv.info.k", PROGBITS, "REGCOUNT 96"}, 0},
        {"a section's name", 0, {".text.j", PROGBITS, "SASS-1"}, 0},
        {"a section's type", 2, {".nv.info.k", 11, "REGCOUNT 80"}, 0},
        {"the size of a section without contents", 3, {".nv.shared.k", NOBITS, "xxxxxxxx"}, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct elf_section s[4];
        memcpy(s, base, sizeof(s));
        s[cases[i].section] = cases[i].now;
        size_t nb = make_elf(b, sizeof(b), s, 4);
        if ((temper_code_hash(b, nb) == h) != cases[i].same)
            fail_msg("code hash with %s changed: %s", cases[i].why, cases[i].same ? "differs" : "is the same");
    }

    /* Not ELF, or not an ELF the parser trusts: hashed whole, never read out of bounds. */
    assert_true(temper_code_hash("plain bytes", 11) == temper_hash64("plain bytes", 11, 0));
    memcpy(b, a, na);
    put(b, 0x28, 1u << 30, 8); /* section headers past the end */
    assert_true(temper_code_hash(b, na) == temper_hash64(b, na, 0));
    memcpy(b, a, na);
    put(b, 0x3c, 0xffff, 2); /* more sections than fit */
    assert_true(temper_code_hash(b, na) == temper_hash64(b, na, 0));
    memcpy(b, a, na);
    put(b, 0x3a, 40, 2); /* a 32-bit section header size */
    assert_true(temper_code_hash(b, na) == temper_hash64(b, na, 0));
    assert_true(temper_code_hash(a, 63) == temper_hash64(a, 63, 0)); /* shorter than a header */
    /* a section whose contents lie past the end is hashed by its size, not read */
    memcpy(b, a, na);
    size_t text_header = (size_t)(b[0x28] | b[0x29] << 8) + 64;
    put(b, text_header + 24, 1u << 30, 8);
    assert_true(temper_code_hash(b, na) != h);
}

/* HMAC-SHA-256 against published vectors (RFC 4231 cases 2 and 6: parts joined, a key longer
 * than a block), and sealed files: a seal binds the bytes, the kind and the name, and only this
 * user's key makes one. */
static void test_seal(void **state)
{
    (void)state;
    unsigned char d[32];
    char hex[65];
    const void *parts[] = {"what do ya want ", "for nothing?"};
    size_t sizes[] = {16, 12};
    assert_int_equal(temper_hmac_sha256((const unsigned char *)"Jefe", 4, parts, sizes, 2, d), 0);
    temper_sha256_hex(d, hex);
    assert_string_equal(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    unsigned char long_key[131];
    memset(long_key, 0xaa, sizeof(long_key));
    const char *big = "Test Using Larger Than Block-Size Key - Hash Key First";
    const void *one[] = {big};
    size_t one_size[] = {strlen(big)};
    assert_int_equal(temper_hmac_sha256(long_key, sizeof(long_key), one, one_size, 1, d), 0);
    temper_sha256_hex(d, hex);
    assert_string_equal(hex, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");

    /* Sealed files, under the test's TEMPER_CACHE. */
    char cache[4096], path[4200], other[4200], msg[512];
    temper_cache_dir(cache, sizeof(cache));
    snprintf(path, sizeof(path), "%s/x/a.bin", cache);
    snprintf(other, sizeof(other), "%s/x/b.bin", cache);
    assert_int_equal(temper_seal_write(path, "build", "a", "payload", 7, msg, sizeof(msg)), 0);
    assert_int_equal(temper_seal_write(other, "build", "b", "evil!!!", 7, msg, sizeof(msg)), 0);
    void *data;
    size_t n;
    assert_int_equal(temper_seal_read(path, "build", "a", 1024, &data, &n, msg, sizeof(msg)), 0);
    assert_int_equal(n, 7);
    assert_memory_equal(data, "payload", 7);
    free(data);
    /* The key is private to the user. */
    char key_path[4200];
    snprintf(key_path, sizeof(key_path), "%s/key", cache);
    struct stat st;
    assert_int_equal(stat(key_path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    /* Another name, another kind, a byte changed, a copy of another entry, no seal at all. */
    assert_int_equal(temper_seal_read(path, "build", "b", 1024, &data, &n, msg, sizeof(msg)), TEMPER_EINVALID);
    assert_int_equal(temper_seal_read(path, "reference", "a", 1024, &data, &n, msg, sizeof(msg)), TEMPER_EINVALID);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fputc('P', f);
    fclose(f);
    assert_int_equal(temper_seal_read(path, "build", "a", 1024, &data, &n, msg, sizeof(msg)), TEMPER_EINVALID);
    assert_non_null(strstr(msg, "does not verify"));
    assert_int_equal(rename(other, path), 0);
    assert_int_equal(temper_seal_read(path, "build", "a", 1024, &data, &n, msg, sizeof(msg)), TEMPER_EINVALID);
    f = fopen(path, "wb");
    assert_non_null(f);
    fputs("a file without a seal", f);
    fclose(f);
    assert_int_equal(temper_seal_read(path, "build", "a", 1024, &data, &n, msg, sizeof(msg)), TEMPER_EINVALID);
    assert_non_null(strstr(msg, "has no seal"));
    assert_int_equal(temper_seal_read(other, "build", "a", 1024, &data, &n, msg, sizeof(msg)), TEMPER_ENOTFOUND);
    /* A key others can read is refused, not used. */
    assert_int_equal(chmod(key_path, 0644), 0);
    assert_int_equal(temper_seal_write(path, "build", "a", "payload", 7, msg, sizeof(msg)), TEMPER_EIO);
    assert_non_null(strstr(msg, "not private"));
    assert_int_equal(chmod(key_path, 0600), 0);
}

static void test_clock(void **state)
{
    (void)state;
    uint64_t t0 = temper_now_ns();
    usleep(20000);
    uint64_t t1 = temper_now_ns();
    assert_true(t1 - t0 >= 20000000ull && t1 - t0 < 2000000000ull);
    double s = temper_now_s();
    assert_true(fabs(s - (double)temper_now_ns() * 1e-9) < 0.1);
}

static void test_errors(void **state)
{
    (void)state;
    static const struct {
        int err;          /* a code */
        const char *want; /* its message */
    } cases[] = {
        {TEMPER_OK, "success"},           {TEMPER_ENOMEM, "out of memory"},
        {TEMPER_EPARSE, "malformed input"}, {TEMPER_ERANGE, "value out of range"},
        {TEMPER_ETIMEOUT, "time limit exceeded"}, {TEMPER_EUNSUPPORTED, "not supported"},
        {1, "unknown error"},             {-1, "unknown error"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_string_equal(temper_strerror(cases[i].err), cases[i].want);
    /* Every code is negative and gets the message the table gives it, and no two codes share a
     * message (so a message names its code). Codes past either end of the table are unknown. */
    static const struct {
        int err;         /* a code */
        const char *msg; /* its message in TEMPER_ERRNO_MAP */
    } map[] = {
#define CODE(name, text) {TEMPER_E##name, text},
        TEMPER_ERRNO_MAP(CODE)
#undef CODE
    };
    const size_t n = sizeof(map) / sizeof(map[0]);
    for (size_t i = 0; i < n; i++) {
        assert_true(map[i].err < 0);
        assert_string_equal(temper_strerror(map[i].err), map[i].msg);
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(map[i].msg, map[j].msg);
    }
    assert_string_equal(temper_strerror(map[0].err - 1), "unknown error");
    assert_string_equal(temper_strerror(map[n - 1].err + 1), "unknown error");

    char msg[8];
    assert_int_equal(temper_fail(msg, sizeof(msg), TEMPER_EPARSE, "%s:%d: bad", "file.cl", 12), TEMPER_EPARSE);
    assert_string_equal(msg, "file.cl"); /* truncated to the buffer, NUL-terminated */
    assert_int_equal(temper_fail(NULL, 0, TEMPER_EIO, "ignored %d", 1), TEMPER_EIO);
}

/* ---- known bugs: each checks the correct behaviour (see CMakeLists.txt) ---- */

/* temper_proc_run stops watching the clock when the child's output closes, then waits for it
 * without a limit: a child that closes stdout and stderr and hangs is never killed. */
static void bug_proc_timeout_after_output_closed(void **state)
{
    (void)state;
    char *argv[] = {"sh", "-c", "exec >/dev/null 2>&1; sleep 3", NULL};
    struct temper_proc_result r;
    char msg[256];
    double start = temper_now_s();
    assert_int_equal(temper_proc_run(argv, 0.3, 1024, &r, msg, sizeof(msg)), 0);
    double took = temper_now_s() - start;
    free(r.output);
    assert_int_equal(r.timed_out, 1);
    if (took > 2.0)
        fail_msg("a 0.3 s limit took %.2f s", took);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buf_limits),
        cmocka_unit_test(test_buf_printf_and_growth),
        cmocka_unit_test_setup_teardown(test_read_file, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_write_file_atomic, make_tmp, remove_tmp),
        cmocka_unit_test_setup_teardown(test_mkdirs_and_dirname, make_tmp, remove_tmp),
        cmocka_unit_test(test_data_folders),
        cmocka_unit_test(test_proc_output_and_exit_code),
        cmocka_unit_test(test_proc_timeout),
        cmocka_unit_test(test_proc_output_limit_and_missing_program),
        cmocka_unit_test(test_rng),
        cmocka_unit_test(test_hash),
        cmocka_unit_test(test_code_hash),
        cmocka_unit_test(test_clock),
        cmocka_unit_test_setup_teardown(test_seal, make_tmp, remove_tmp),
        cmocka_unit_test(test_errors),
    };
    const struct CMUnitTest known_bugs[] = {
        cmocka_unit_test(bug_proc_timeout_after_output_closed),
    };
    if (argc == 3 && !strcmp(argv[1], "--known-bug"))
        return unit_run_known_bug("util known bugs", known_bugs, sizeof(known_bugs) / sizeof(known_bugs[0]),
                                  argv[2]);
    return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}
