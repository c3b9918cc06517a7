/* test_store.c: unit tests of store.h on a real SQLite file in a fresh folder under /tmp: WAL
 * mode, recording results (a candidate stored once), counts by verdict, device calibrations,
 * refused results that store nothing, keys on the task's content and the device's identity,
 * lineage, migrations from the previous schema, a store newer than the code, damaged files and
 * injected write failures. Rows are checked with sqlite3 directly. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <ftw.h>
#include <jansson.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "temper/error.h"
#include "temper/store.h"
#include "temper/task.h"

#include "unit.h"

/* Live jansson allocations, counted through json_set_alloc_funcs to find leaked values. */
static long json_live;

static void *counting_malloc(size_t n)
{
    void *p = malloc(n);
    if (p)
        json_live++;
    return p;
}

static void counting_free(void *p)
{
    if (p)
        json_live--;
    free(p);
}

/* ---- a fresh temporary folder per test, holding the store ---- */

/* Per-test state. */
struct fixture {
    char dir[256];  /* the temporary folder */
    char db[512];   /* $TEMPER_HOME/temper.db */
};

/* The shared temporary folder, plus where the store's file will be. */
static int store_setup(void **state)
{
    void *dir = NULL;
    struct fixture *f = calloc(1, sizeof(*f));
    if (!f || make_tmp(&dir)) {
        free(f);
        return -1;
    }
    snprintf(f->dir, sizeof(f->dir), "%s", (char *)dir);
    snprintf(f->db, sizeof(f->db), "%s/home/temper.db", f->dir);
    free(dir);
    *state = f;
    return 0;
}

static int store_teardown(void **state)
{
    struct fixture *f = *state;
    void *dir = f ? strdup(f->dir) : NULL;
    free(f);
    return remove_tmp(&dir);
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Runs a query returning one value on its own connection; returns it as text (caller frees). */
static char *query_text(const char *db, const char *sql)
{
    sqlite3 *conn;
    assert_int_equal(sqlite3_open_v2(db, &conn, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(conn, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(conn));
    char *out = NULL;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        out = strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(conn);
    return out;
}

static long long query_int(const char *db, const char *sql)
{
    char *text = query_text(db, sql);
    if (!text)
        fail_msg("%s: no value", sql);
    long long v = strtoll(text, NULL, 10);
    free(text);
    return v;
}

static double query_double(const char *db, const char *sql)
{
    char *text = query_text(db, sql);
    if (!text)
        fail_msg("%s: no value", sql);
    double v = strtod(text, NULL);
    free(text);
    return v;
}

static void assert_query(const char *db, const char *sql, const char *want)
{
    char *got = query_text(db, sql);
    if (!got || strcmp(got, want))
        fail_msg("%s = '%s', want '%s'", sql, got ? got : "(null)", want);
    free(got);
}

/* The task content hash and device key of make_result's results. */
#define TASK_HASH "0123456789abcdef"
#define DEVICE_KEY "opencl|X|1"

/* A result object as temper_eval returns it (the fields the store reads). */
static json_t *make_result(const char *hash, const char *verdict, const char *path, double median_ms)
{
    json_t *r = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:{s:s, s:s}, s:[{s:s, s:i}], "
                          "s:[{s:s, s:f, s:f, s:f}], s:i, s:i, s:s, s:{s:s, s:s, s:s}}",
                          "source_hash", hash, "task", "softmax", "candidate", path, "verdict", verdict, "message",
                          "all good", "device", "opencl:0", "options", "-DBLOCK=256 -DVEC=4", "knobs", "BLOCK",
                          "256", "VEC", "4", "checks", "shape", "R=7 C=1000", "mismatches", 0, "timings", "shape",
                          "R=65536 C=4096", "median_ms", median_ms, "speedup", 1.5, "roofline_share", 0.25, "seed",
                          7, "secret_seed", 99, "task_hash", TASK_HASH, "device_info", "id", "opencl:0", "name", "X",
                          "driver", "1");
    assert_non_null(r);
    return r;
}

static void test_open_creates_wal_store(void **state)
{
    struct fixture *f = *state;
    char msg[512] = "";
    assert_false(exists(f->db));
    struct temper_store *s = NULL;
    /* NULL: $TEMPER_HOME/temper.db, the folder created as needed. */
    assert_int_equal(temper_store_open(NULL, &s, msg, sizeof(msg)), 0);
    assert_non_null(s);
    assert_true(exists(f->db));
    assert_query(f->db, "PRAGMA journal_mode", "wal");

    json_t *r = make_result("00000000000000aa", "correct", "k.cl", 1.0);
    assert_int_equal(temper_store_record(s, r, "source", NULL, msg, sizeof(msg)), 0);
    json_decref(r);
    char wal[600];
    snprintf(wal, sizeof(wal), "%s-wal", f->db);
    assert_true(exists(wal)); /* a write in WAL mode goes to the -wal file */
    temper_store_close(s);
    temper_store_close(NULL); /* closing nothing is allowed */

    /* An explicit path in a folder that does not exist fails and says where. */
    char bad[600];
    snprintf(bad, sizeof(bad), "%s/no/such/folder/t.db", f->dir);
    s = NULL;
    assert_int_equal(temper_store_open(bad, &s, msg, sizeof(msg)), TEMPER_ESTORE);
    assert_contains(msg, bad);
    /* A folder is not a database. */
    assert_int_equal(temper_store_open(f->dir, &s, msg, sizeof(msg)), TEMPER_ESTORE);
}

/* TEMPER_HOME naming a regular file: the message says it is not a folder (SQLite alone says only
 * "unable to open database file"). */
static void test_home_not_a_folder(void **state)
{
    struct fixture *f = *state;
    char home[600], msg[512] = "";
    snprintf(home, sizeof(home), "%s/home-file", f->dir);
    FILE *file = fopen(home, "w");
    assert_non_null(file);
    fclose(file);
    char *saved = strdup(getenv("TEMPER_HOME"));
    setenv("TEMPER_HOME", home, 1);
    struct temper_store *s = NULL;
    int err = temper_store_open(NULL, &s, msg, sizeof(msg));
    setenv("TEMPER_HOME", saved, 1);
    free(saved);
    assert_int_equal(err, TEMPER_ESTORE);
    assert_null(s);
    assert_contains(msg, home);
    assert_contains(msg, "is not a folder");
}

/* A source holding a NUL byte (an invalid candidate's) is stored whole, every byte its hash covers. */
static void test_record_source_keeps_every_byte(void **state)
{
    struct fixture *f = *state;
    char msg[512] = "";
    struct temper_store *s;
    assert_int_equal(temper_store_open(NULL, &s, msg, sizeof(msg)), 0);
    static const char src[] = "// @temper task softmax\n\0junk\n";
    json_t *r = make_result("3333333333333333", "invalid", "nul.cl", 1.0);
    assert_int_equal(temper_store_record_source(s, r, src, sizeof(src) - 1, 0, NULL, NULL, msg, sizeof(msg)), 0);
    json_decref(r);
    temper_store_close(s);
    char want[16];
    snprintf(want, sizeof(want), "%zu", sizeof(src) - 1);
    assert_query(f->db, "SELECT length(CAST(source AS BLOB)) FROM candidates", want);
}

static void test_record_and_count(void **state)
{
    struct fixture *f = *state;
    char msg[512] = "";
    struct temper_store *s;
    assert_int_equal(temper_store_open(NULL, &s, msg, sizeof(msg)), 0);

    static const char src1[] = "// @temper task softmax\n__kernel void a(void) {}\n";
    static const char src2[] = "// @temper task softmax\n__kernel void b(void) {}\n";
    json_t *r1 = make_result("1111111111111111", "correct", "dir/a.cl", 2.5);
    json_t *r2 = make_result("2222222222222222", "incorrect", "dir/b.cl", 4.0);
    int64_t id1 = 0, id2 = 0, id3 = 0;
    assert_int_equal(temper_store_record(s, r1, src1, &id1, msg, sizeof(msg)), 0);
    assert_int_equal(temper_store_record(s, r2, src2, &id2, msg, sizeof(msg)), 0);
    assert_true(id1 > 0);
    assert_true(id2 > id1);

    /* Table: verdict -> count. */
    static const struct {
        const char *verdict; /* NULL: all */
        int64_t count;       /* evaluations with it */
    } counts[] = {{NULL, 2}, {"correct", 1}, {"incorrect", 1}, {"timeout", 0}, {"bogus", 0}};
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
        assert_int_equal(temper_store_count(s, counts[i].verdict), counts[i].count);

    /* The same candidate again: a second evaluation, one candidate row. */
    assert_int_equal(temper_store_record(s, r1, src1, &id3, msg, sizeof(msg)), 0);
    assert_true(id3 > id2);
    assert_int_equal(temper_store_count(s, NULL), 3);
    assert_int_equal(temper_store_count(s, "correct"), 2);
    assert_int_equal(query_int(f->db, "SELECT count(*) FROM candidates"), 2);
    assert_int_equal(query_int(f->db, "SELECT count(*) FROM candidates WHERE hash = '1111111111111111'"), 1);
    assert_int_equal(query_int(f->db, "SELECT count(*) FROM evaluations WHERE candidate = '1111111111111111'"), 2);

    /* What the rows hold. */
    /* The candidate row is the first one seen, not rewritten by later records of it. */
    json_t *moved = make_result("1111111111111111", "incorrect", "elsewhere/a.cl", 3.0);
    assert_int_equal(temper_store_record(s, moved, "another text", NULL, msg, sizeof(msg)), 0);
    json_decref(moved);
    assert_int_equal(query_int(f->db, "SELECT count(*) FROM candidates"), 2);
    assert_query(f->db, "SELECT path FROM candidates WHERE hash = '1111111111111111'", "dir/a.cl");
    assert_query(f->db, "SELECT source FROM candidates WHERE hash = '1111111111111111'", src1);
    assert_query(f->db, "SELECT source FROM candidates WHERE hash = '2222222222222222'", src2);
    assert_query(f->db, "SELECT path FROM candidates WHERE hash = '2222222222222222'", "dir/b.cl");
    assert_query(f->db, "SELECT task FROM candidates WHERE hash = '2222222222222222'", "softmax");
    char sql[256];
    static const struct {
        const char *column; /* in evaluations */
        const char *want;   /* its text for the first evaluation */
    } columns[] = {
        {"candidate", "1111111111111111"},
        {"task", "softmax"},
        {"device", "opencl:0"},
        {"device_key", DEVICE_KEY},
        {"task_hash", TASK_HASH},
        {"options", "-DBLOCK=256 -DVEC=4"},
        {"verdict", "correct"},
        {"message", "all good"},
        {"knobs", "{\"BLOCK\":\"256\",\"VEC\":\"4\"}"},
        {"checks", "[{\"shape\":\"R=7 C=1000\",\"mismatches\":0}]"},
        {"seed", "7"},
        {"secret_seed", "99"},
    };
    for (size_t i = 0; i < sizeof(columns) / sizeof(columns[0]); i++) {
        snprintf(sql, sizeof(sql), "SELECT %s FROM evaluations WHERE id = %lld", columns[i].column, (long long)id1);
        assert_query(f->db, sql, columns[i].want);
    }
    snprintf(sql, sizeof(sql), "SELECT median_ms FROM evaluations WHERE id = %lld", (long long)id1);
    assert_true(query_double(f->db, sql) == 2.5);
    snprintf(sql, sizeof(sql), "SELECT speedup FROM evaluations WHERE id = %lld", (long long)id2);
    assert_true(query_double(f->db, sql) == 1.5);
    snprintf(sql, sizeof(sql), "SELECT roofline_share FROM evaluations WHERE id = %lld", (long long)id2);
    assert_true(query_double(f->db, sql) == 0.25);
    /* The whole result is kept and reads back equal. */
    snprintf(sql, sizeof(sql), "SELECT result FROM evaluations WHERE id = %lld", (long long)id2);
    char *text = query_text(f->db, sql);
    assert_non_null(text);
    json_t *back = json_loads(text, 0, NULL);
    free(text);
    assert_true(json_equal(back, r2));
    json_decref(back);

    json_decref(r1);
    json_decref(r2);
    temper_store_close(s);

    /* Everything is still there after reopening. */
    assert_int_equal(temper_store_open(f->db, &s, msg, sizeof(msg)), 0);
    assert_int_equal(temper_store_count(s, NULL), 4);
    assert_int_equal(temper_store_count(s, "incorrect"), 2);
    temper_store_close(s);
}

/* A tune takes a configuration from the store only if the stored result can rank it: a correct
 * result must have been timed; a failure counts as it is. */
static void test_lookup_needs_a_timing(void **state)
{
    (void)state;
    char msg[512] = "";
    struct temper_store *s;
    assert_int_equal(temper_store_open(NULL, &s, msg, sizeof(msg)), 0);
    static const struct {
        const char *what;    /* the case */
        const char *verdict; /* the stored result's verdict */
        int timed;           /* 1: it has a median time */
        int found;           /* 1: lookup returns it */
    } cases[] = {
        {"a timed correct result", "correct", 1, 1},
        {"an untimed correct result (--no-timing)", "correct", 0, 0},
        {"an untimed incorrect result", "incorrect", 0, 1},
        {"an untimed compile error", "compile_error", 0, 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char hash[17];
        snprintf(hash, sizeof(hash), "%016zx", i + 0xa0);
        json_t *r = make_result(hash, cases[i].verdict, "k.cl", 1.5);
        if (!cases[i].timed)
            json_object_set_new(r, "timings", json_array());
        assert_int_equal(temper_store_record(s, r, hash, NULL, msg, sizeof(msg)), 0);
        json_decref(r);
        json_t *got = temper_store_lookup(s, hash, TASK_HASH, DEVICE_KEY, "-DBLOCK=256 -DVEC=4");
        if (!got != !cases[i].found)
            fail_msg("lookup of %s: %s", cases[i].what, got ? "found" : "not found");
        json_decref(got);
    }
    /* An untimed correct result recorded after a timed one does not hide it. */
    json_t *timed = make_result("00000000000000ff", "correct", "k.cl", 2.5);
    json_t *untimed = make_result("00000000000000ff", "correct", "k.cl", 0);
    json_object_set_new(untimed, "timings", json_array());
    assert_int_equal(temper_store_record(s, timed, "ff", NULL, msg, sizeof(msg)), 0);
    assert_int_equal(temper_store_record(s, untimed, "ff", NULL, msg, sizeof(msg)), 0);
    json_t *got = temper_store_lookup(s, "00000000000000ff", TASK_HASH, DEVICE_KEY, "-DBLOCK=256 -DVEC=4");
    assert_non_null(got);
    assert_true(json_number_value(json_object_get(json_array_get(json_object_get(got, "timings"), 0), "median_ms")) ==
                2.5);
    json_decref(got);
    json_decref(timed);
    json_decref(untimed);
    temper_store_close(s);
}

static void test_calibration(void **state)
{
    struct fixture *f = *state;
    char msg[512] = "";
    struct temper_store *s;
    assert_int_equal(temper_store_open(NULL, &s, msg, sizeof(msg)), 0);
    json_t *info = json_pack("{s:s, s:s, s:s}", "id", "opencl:0", "name", "X", "driver", "1");
    json_t *ceilings = json_pack("{s:f, s:f}", "copy_gbs", 812.5, "fma_gflops", 40000.0);

    assert_null(temper_store_calibration(s, info)); /* never calibrated */
    assert_int_equal(temper_store_put_calibration(s, info, ceilings, msg, sizeof(msg)), 0);
    json_t *got = temper_store_calibration(s, info);
    assert_non_null(got);
    assert_true(json_equal(got, ceilings));
    json_decref(got);
    assert_true(query_double(f->db, "SELECT copy_gbs FROM devices") == 812.5);
    assert_true(query_double(f->db, "SELECT fma_gflops FROM devices") == 40000.0);

    /* Table: other device descriptions -> whether they share X's ceilings. */
    static const struct {
        const char *id, *name, *driver; /* the description */
        int shares;                     /* 1: same ceilings, 0: never calibrated */
    } others[] = {
        {"opencl:0", "Y", "1", 0},  /* another device */
        {"opencl:0", "X", "2", 0},  /* another driver: measured again */
        {"cuda:0", "X", "1", 0},    /* another backend */
        {"opencl:1", "X", "1", 1},  /* the index is not part of the key: identical devices share */
    };
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
        json_t *other = json_pack("{s:s, s:s, s:s}", "id", others[i].id, "name", others[i].name, "driver",
                                  others[i].driver);
        json_t *c = temper_store_calibration(s, other);
        if (others[i].shares ? !(c && json_equal(c, ceilings)) : c != NULL)
            fail_msg("%s %s %s: calibration %s", others[i].id, others[i].name, others[i].driver,
                     c ? "found" : "missing");
        json_decref(c);
        json_decref(other);
    }

    /* A new measurement replaces the old one. */
    json_t *newer = json_pack("{s:f, s:f}", "copy_gbs", 900.25, "fma_gflops", 41000.0);
    assert_int_equal(temper_store_put_calibration(s, info, newer, msg, sizeof(msg)), 0);
    assert_int_equal(query_int(f->db, "SELECT count(*) FROM devices"), 1);
    temper_store_close(s);
    assert_int_equal(temper_store_open(NULL, &s, msg, sizeof(msg)), 0);
    got = temper_store_calibration(s, info);
    assert_non_null(got);
    assert_true(json_equal(got, newer));
    json_decref(got);
    temper_store_close(s);
    json_decref(info);
    json_decref(ceilings);
    json_decref(newer);
}

static void test_refused_results_store_nothing(void **state)
{
    struct fixture *f = *state;
    char msg[512] = "";
    struct temper_store *s;
    assert_int_equal(temper_store_open(NULL, &s, msg, sizeof(msg)), 0);
    json_t *good = make_result("3333333333333333", "correct", "c.cl", 1.0);
    assert_int_equal(temper_store_record(s, good, "src", NULL, msg, sizeof(msg)), 0);

    /* Table: a field removed (or the source left out) -> the error. */
    static const struct {
        const char *drop;   /* field to remove, NULL for none */
        int no_source;      /* 1: pass a NULL source */
        int err;            /* the result */
        const char *reason; /* part of the message */
    } cases[] = {
        {"source_hash", 0, TEMPER_EINVALID, "source_hash"},
        {"task", 0, TEMPER_EINVALID, "task"},
        {NULL, 1, TEMPER_EINVALID, "source"},
        {"verdict", 0, TEMPER_ESTORE, "recording the evaluation"}, /* rolled back: no candidate either */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *r = make_result("4444444444444444", "incorrect", "d.cl", 1.0);
        if (cases[i].drop)
            json_object_del(r, cases[i].drop);
        int64_t id = -7;
        msg[0] = 0;
        int err = temper_store_record(s, r, cases[i].no_source ? NULL : "src", &id, msg, sizeof(msg));
        json_decref(r);
        if (err != cases[i].err)
            fail_msg("case %zu: returned %d, want %d (%s)", i, err, cases[i].err, msg);
        assert_contains(msg, cases[i].reason);
        assert_int_equal(id, -7);
        assert_int_equal(temper_store_count(s, NULL), 1);
        assert_int_equal(temper_store_count(s, "incorrect"), 0);
        assert_int_equal(query_int(f->db, "SELECT count(*) FROM candidates"), 1);
    }
    /* The store still works after a refusal. */
    json_t *next = make_result("5555555555555555", "timeout", "e.cl", 1.0);
    assert_int_equal(temper_store_record(s, next, "src", NULL, msg, sizeof(msg)), 0);
    assert_int_equal(temper_store_count(s, NULL), 2);
    assert_int_equal(temper_store_count(s, "timeout"), 1);
    json_decref(next);
    json_decref(good);
    temper_store_close(s);
}

/* ---- keys: the task's content and the device's identity ---- */

/* best takes each configuration at its latest timed evaluation: a noisy screening sample of a
 * configuration that its re-timing found slower is not the best (a tune screens, then re-times). */
static void test_best_takes_the_retiming(void **state)
{
    (void)state;
    char msg[512] = "";
    struct temper_store *s;
    assert_int_equal(temper_store_open(NULL, &s, msg, sizeof(msg)), 0);
    json_t *screen = make_result("00000000000000d1", "correct", "a.cl", 18.0); /* screening, noisy */
    json_t *other = make_result("00000000000000d2", "correct", "b.cl", 20.0);
    json_t *retime = make_result("00000000000000d1", "correct", "a.cl", 23.0); /* the same code, re-timed */
    json_t *rs[] = {screen, other, retime};
    const char *srcs[] = {"src-a", "src-b", "src-a"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(temper_store_record(s, rs[i], srcs[i], NULL, msg, sizeof(msg)), 0);
        json_decref(rs[i]);
    }
    json_t *best = NULL;
    char *source = NULL;
    assert_int_equal(temper_store_best(s, "softmax", TASK_HASH, DEVICE_KEY, &best, &source, msg, sizeof(msg)), 0);
    assert_string_equal(json_string_value(json_object_get(best, "source_hash")), "00000000000000d2");
    assert_string_equal(source, "src-b");
    json_decref(best);
    free(source);
    temper_store_close(s);
}

/* best takes each configuration at its latest evaluation of any verdict: one whose latest run was
 * wrong (a kernel wrong only on some inputs) or timed out drops out, however fast it was when it
 * passed; a correct run without a time neither counts nor hides the timing before it. */
static void test_best_drops_a_configuration_now_failing(void **state)
{
    (void)state;
    char msg[512] = "";
    struct temper_store *s;
    assert_int_equal(temper_store_open(NULL, &s, msg, sizeof(msg)), 0);
    static const struct {
        const char *hash;    /* the configuration's source */
        const char *verdict; /* its verdict in this run */
        double ms;           /* its time; 0: not timed */
    } runs[] = {
        {"00000000000000e1", "correct", 10.0},   /* fastest, then wrong on other inputs */
        {"00000000000000e1", "incorrect", 0},
        {"00000000000000e2", "correct", 20.0},   /* then checked again without a time */
        {"00000000000000e2", "correct", 0},
        {"00000000000000e3", "incorrect", 0},    /* wrong once, then correct */
        {"00000000000000e3", "correct", 30.0},
    };
    for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
        json_t *r = make_result(runs[i].hash, runs[i].verdict, "k.cl", runs[i].ms);
        if (!runs[i].ms)
            json_object_set_new(r, "timings", json_array());
        assert_int_equal(temper_store_record(s, r, runs[i].hash, NULL, msg, sizeof(msg)), 0);
        json_decref(r);
    }
    json_t *best = NULL;
    char *source = NULL;
    assert_int_equal(temper_store_best(s, "softmax", TASK_HASH, DEVICE_KEY, &best, &source, msg, sizeof(msg)), 0);
    assert_string_equal(json_string_value(json_object_get(best, "source_hash")), "00000000000000e2");
    json_decref(best);
    free(source);
    /* e2 times out now: e3 is the best; then e3 is wrong too: none is left, and the message says why. */
    const char *later[][2] = {{"00000000000000e2", "timeout"}, {"00000000000000e3", "incorrect"}};
    const char *want[] = {"00000000000000e3", NULL};
    for (int i = 0; i < 2; i++) {
        json_t *r = make_result(later[i][0], later[i][1], "k.cl", 0);
        json_object_set_new(r, "timings", json_array());
        assert_int_equal(temper_store_record(s, r, later[i][0], NULL, msg, sizeof(msg)), 0);
        json_decref(r);
        int err = temper_store_best(s, "softmax", TASK_HASH, DEVICE_KEY, &best, &source, msg, sizeof(msg));
        if (want[i]) {
            assert_int_equal(err, 0);
            assert_string_equal(json_string_value(json_object_get(best, "source_hash")), want[i]);
        } else {
            assert_int_equal(err, TEMPER_ENOTFOUND);
            assert_null(best);
            if (!strstr(msg, "3 configurations once correct are left out: their latest evaluation is not correct"))
                fail_msg("message: %s", msg);
        }
        json_decref(best);
        free(source);
    }
    temper_store_close(s);
}

/* A result judged against one content of a task is never reused, nor served as best, under
 * another; results of one device never stand for another of the same name and driver. */
static void test_keys_task_content_and_device(void **state)
{
    (void)state;
    char msg[512] = "";
    struct temper_store *s;
    assert_int_equal(temper_store_open(NULL, &s, msg, sizeof(msg)), 0);
    json_t *old = make_result("00000000000000c1", "correct", "k.cl", 1.0); /* fast, under TASK_HASH */
    assert_int_equal(temper_store_record(s, old, "src", NULL, msg, sizeof(msg)), 0);
    static const char other_task[] = "fedcba9876543210";

    /* Table: the key asked for -> whether the stored result answers it. */
    static const struct {
        const char *what;       /* the case */
        const char *task_hash;  /* asked for */
        const char *device_key; /* asked for */
        int found;              /* 1: lookup returns it */
    } cases[] = {
        {"the same task content and device", TASK_HASH, DEVICE_KEY, 1},
        {"the task changed", other_task, DEVICE_KEY, 0},
        {"another device", TASK_HASH, "opencl|Y|1", 0},
        {"the device's index, not its identity", TASK_HASH, "opencl:0", 0},
        {"no task content known", NULL, DEVICE_KEY, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *got = temper_store_lookup(s, "00000000000000c1", cases[i].task_hash, cases[i].device_key,
                                          "-DBLOCK=256 -DVEC=4");
        if (!got != !cases[i].found)
            fail_msg("lookup with %s: %s", cases[i].what, got ? "found" : "not found");
        json_decref(got);
    }

    /* best: under the changed task there is none, and it says the old result was left out. */
    json_t *best = NULL;
    char *source = NULL;
    assert_int_equal(temper_store_best(s, "softmax", other_task, NULL, &best, &source, msg, sizeof(msg)),
                     TEMPER_ENOTFOUND);
    assert_null(best);
    assert_null(source);
    assert_contains(msg, "no correct, timed kernel for task 'softmax' in the store, judged against the task's "
                         "current content (" "fedcba9876543210" ")");
    assert_contains(msg, "1 correct result judged against another version of the task is left out");
    /* A slower result under the new content is the best of the new content, never the old one. */
    json_t *fresh = make_result("00000000000000c2", "correct", "k2.cl", 5.0);
    json_object_set_new(fresh, "task_hash", json_string(other_task));
    assert_int_equal(temper_store_record(s, fresh, "src2", NULL, msg, sizeof(msg)), 0);
    assert_int_equal(temper_store_best(s, "softmax", other_task, NULL, &best, &source, msg, sizeof(msg)), 0);
    assert_string_equal(json_string_value(json_object_get(best, "source_hash")), "00000000000000c2");
    assert_string_equal(source, "src2");
    json_decref(best);
    free(source);
    /* Under the old content, on its device, the old one; on another device, none. */
    assert_int_equal(temper_store_best(s, "softmax", TASK_HASH, DEVICE_KEY, &best, &source, msg, sizeof(msg)), 0);
    assert_string_equal(json_string_value(json_object_get(best, "source_hash")), "00000000000000c1");
    json_decref(best);
    free(source);
    assert_int_equal(temper_store_best(s, "softmax", TASK_HASH, "opencl|Y|1", &best, &source, msg, sizeof(msg)),
                     TEMPER_ENOTFOUND);
    assert_contains(msg, "on opencl|Y|1");

    /* Runs resume only under the same task content and device. */
    json_t *settings = json_pack("{s:s, s:s, s:s, s:s, s:s}", "kind", "tune", "source_hash", "00000000000000c1",
                                 "device", "opencl:0", "task_hash", TASK_HASH, "device_key", DEVICE_KEY);
    int64_t run = 0;
    assert_int_equal(temper_store_run_begin(s, settings, &run, msg, sizeof(msg)), 0);
    json_decref(settings);
    json_t *back = NULL;
    assert_int_equal(temper_store_run_unfinished(s, "00000000000000c1", TASK_HASH, DEVICE_KEY, &back), run);
    json_decref(back);
    assert_int_equal(temper_store_run_unfinished(s, "00000000000000c1", other_task, DEVICE_KEY, &back), 0);
    assert_null(back);
    assert_int_equal(temper_store_run_unfinished(s, "00000000000000c1", TASK_HASH, "opencl|Y|1", &back), 0);
    json_decref(old);
    json_decref(fresh);
    temper_store_close(s);
}

static void test_device_key(void **state)
{
    (void)state;
    /* Table: a device description -> its key. */
    static const struct {
        const char *info; /* the worker's device info, JSON */
        const char *key;  /* what it is stored under */
    } cases[] = {
        {"{\"id\":\"opencl:0\",\"name\":\"cpu-x\",\"driver\":\"6.0\"}", "opencl|cpu-x|6.0"},
        {"{\"id\":\"opencl:3\",\"name\":\"cpu-x\",\"driver\":\"6.0\"}", "opencl|cpu-x|6.0"},
        {"{\"id\":\"cuda:0\",\"name\":\"H200\",\"driver\":\"12.8\",\"uuid\":\"GPU-1\",\"pci_bus_id\":\"0000:19:00.0\"}",
         "cuda|H200|12.8|GPU-1"},
        {"{\"id\":\"cuda:1\",\"name\":\"H200\",\"driver\":\"12.8\",\"uuid\":\"GPU-2\"}", "cuda|H200|12.8|GPU-2"},
        {"{\"id\":\"cuda:0\",\"name\":\"H200\",\"driver\":\"12.8\",\"uuid\":\"\",\"pci_bus_id\":\"0000:19:00.0\"}",
         "cuda|H200|12.8|0000:19:00.0"},
        {"{\"id\":\"cuda:0\",\"backend\":\"cuda\",\"name\":\"H200\"}", "cuda|H200|"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *info = json_loads(cases[i].info, 0, NULL);
        assert_non_null(info);
        char key[256];
        temper_store_device_key(info, key, sizeof(key));
        if (strcmp(key, cases[i].key))
            fail_msg("%s: key '%s', want '%s'", cases[i].info, key, cases[i].key);
        json_decref(info);
    }
}

/* Two GPUs of one model and driver are two devices: one's calibration is not the other's. */
static void test_calibration_by_identity(void **state)
{
    (void)state;
    char msg[512] = "";
    struct temper_store *s;
    assert_int_equal(temper_store_open(NULL, &s, msg, sizeof(msg)), 0);
    json_t *gpu0 = json_pack("{s:s, s:s, s:s, s:s}", "id", "cuda:0", "name", "H200", "driver", "12.8", "uuid", "GPU-a");
    json_t *gpu0_moved = json_pack("{s:s, s:s, s:s, s:s}", "id", "cuda:1", "name", "H200", "driver", "12.8", "uuid",
                                   "GPU-a");
    json_t *gpu1 = json_pack("{s:s, s:s, s:s, s:s}", "id", "cuda:0", "name", "H200", "driver", "12.8", "uuid", "GPU-b");
    json_t *ceilings = json_pack("{s:f, s:f}", "copy_gbs", 4000.0, "fma_gflops", 60000.0);
    assert_int_equal(temper_store_put_calibration(s, gpu0, ceilings, msg, sizeof(msg)), 0);
    json_t *got = temper_store_calibration(s, gpu0_moved); /* the same GPU under another index */
    assert_non_null(got);
    assert_true(json_equal(got, ceilings));
    json_decref(got);
    assert_null(temper_store_calibration(s, gpu1)); /* cuda:0 today, another GPU */
    json_decref(gpu0);
    json_decref(gpu0_moved);
    json_decref(gpu1);
    json_decref(ceilings);
    temper_store_close(s);
}

static void test_lineage(void **state)
{
    struct fixture *f = *state;
    char msg[512] = "";
    struct temper_store *s;
    assert_int_equal(temper_store_open(NULL, &s, msg, sizeof(msg)), 0);
    json_t *parent = make_result("00000000000000d1", "correct", "p.cl", 2.0);
    json_t *child = make_result("00000000000000d2", "correct", "c.cl", 1.0);
    int64_t parent_id = 0, child_id = 0;
    assert_int_equal(temper_store_record(s, parent, "parent src", &parent_id, msg, sizeof(msg)), 0);
    const struct temper_lineage lineage = {parent_id, "mutate", "agent-7", "batch-42"};
    assert_int_equal(temper_store_record_lineage(s, child, "child src", 0, &lineage, &child_id, msg, sizeof(msg)), 0);
    char sql[256], want[32];
    static const struct {
        const char *column; /* of the child's evaluation */
        const char *want;   /* its value; NULL: the parent's row id */
    } columns[] = {{"parent_id", NULL}, {"operator", "mutate"}, {"client", "agent-7"}, {"batch_id", "batch-42"}};
    for (size_t i = 0; i < sizeof(columns) / sizeof(columns[0]); i++) {
        snprintf(sql, sizeof(sql), "SELECT %s FROM evaluations WHERE id = %lld", columns[i].column,
                 (long long)child_id);
        snprintf(want, sizeof(want), "%lld", (long long)parent_id);
        assert_query(f->db, sql, columns[i].want ? columns[i].want : want);
    }
    /* The candidate row names its parent candidate and the operator that made it. */
    assert_query(f->db, "SELECT parent FROM candidates WHERE hash = '00000000000000d2'", "00000000000000d1");
    assert_query(f->db, "SELECT operator FROM candidates WHERE hash = '00000000000000d2'", "mutate");
    /* Without lineage, the columns are empty. */
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM evaluations WHERE id = %lld AND parent_id IS NULL AND "
             "operator IS NULL AND client IS NULL AND batch_id IS NULL", (long long)parent_id);
    assert_int_equal(query_int(f->db, sql), 1);
    json_decref(parent);
    json_decref(child);
    temper_store_close(s);
}

/* ---- migrations ---- */

/* The schema as it was in git before versions were kept (user_version 0), and the same before
 * evaluations had run_id: stores written by those versions of temper. */
static const char schema_head[] =
    "PRAGMA journal_mode=WAL;"
    "CREATE TABLE IF NOT EXISTS devices ("
    "  key TEXT PRIMARY KEY,"
    "  backend TEXT NOT NULL, name TEXT NOT NULL, info TEXT NOT NULL,"
    "  copy_gbs REAL, fma_gflops REAL, ceilings TEXT, calibrated_at TEXT);"
    "CREATE TABLE IF NOT EXISTS candidates ("
    "  hash TEXT PRIMARY KEY, task TEXT NOT NULL, path TEXT, source TEXT NOT NULL,"
    "  parent TEXT, operator TEXT, created_at TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS evaluations ("
    "  id INTEGER PRIMARY KEY, candidate TEXT NOT NULL REFERENCES candidates(hash),"
    "  task TEXT NOT NULL, device TEXT, knobs TEXT, options TEXT, verdict TEXT NOT NULL, message TEXT,"
    "  median_ms REAL, speedup REAL, roofline_share REAL, checks TEXT, timings TEXT,"
    "  seed INTEGER, secret_seed INTEGER, result TEXT NOT NULL, created_at TEXT NOT NULL, run_id INTEGER);"
    "CREATE INDEX IF NOT EXISTS evaluations_task ON evaluations(task, device, verdict);"
    "CREATE INDEX IF NOT EXISTS evaluations_candidate ON evaluations(candidate, device, options);"
    "CREATE TABLE IF NOT EXISTS runs ("
    "  id INTEGER PRIMARY KEY, kind TEXT NOT NULL, candidate TEXT NOT NULL, device TEXT NOT NULL,"
    "  settings TEXT NOT NULL, summary TEXT, started_at TEXT NOT NULL, finished_at TEXT);";

/* Rows such a store held: a calibrated device, a candidate, a tune run and two evaluations. */
static const char rows_head[] =
    "INSERT INTO devices VALUES('opencl|X|1', 'opencl', 'X', '{\"id\":\"opencl:0\",\"name\":\"X\",\"driver\":\"1\"}',"
    "  812.5, 40000, '{\"copy_gbs\":812.5,\"fma_gflops\":40000}', '2026-01-01T00:00:00Z');"
    "INSERT INTO candidates VALUES('00000000000000e1', 'softmax', 'k.cl', 'old source', NULL, NULL,"
    "  '2026-01-01T00:00:00Z');"
    "INSERT INTO runs VALUES(1, 'tune', '00000000000000e1', 'opencl:0', '{\"strategy\":\"random\"}', NULL,"
    "  '2026-01-01T00:00:00Z', NULL);"
    "INSERT INTO evaluations(id, candidate, task, device, options, verdict, median_ms, result, created_at%s) VALUES"
    "  (1, '00000000000000e1', 'softmax', 'opencl:0', '-DB=1', 'correct', 1.5,"
    "   '{\"verdict\":\"correct\",\"device_info\":{\"id\":\"opencl:0\",\"name\":\"X\",\"driver\":\"1\"}}',"
    "   '2026-01-01T00:00:00Z'%s),"
    "  (2, '00000000000000e1', 'softmax', 'opencl:0', '-DB=2', 'incorrect', NULL, 'not json',"
    "   '2026-01-01T00:00:01Z'%s);";

/* Opening a store written by the previous schema keeps every row, adds the new columns and
 * sets the version; the old results are kept but not reused, since what they were judged
 * against is unknown. */
static void test_migrates_previous_schema(void **state)
{
    struct fixture *f = *state;
    /* Table: the old store's variant. */
    static const struct {
        const char *what; /* the case */
        int run_id;       /* 1: evaluations has run_id */
    } cases[] = {{"the schema at the last unversioned commit", 1}, {"a store from before tune runs", 0}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char db[600], sql[4096], msg[512] = "";
        snprintf(db, sizeof(db), "%s/old%zu.db", f->dir, i);
        sqlite3 *conn;
        assert_int_equal(sqlite3_open(db, &conn), SQLITE_OK);
        char schema[sizeof(schema_head)];
        snprintf(schema, sizeof(schema), "%s", schema_head);
        if (!cases[i].run_id) { /* the same CREATE without its last column */
            char *cut = strstr(schema, ", run_id INTEGER");
            memmove(cut, cut + strlen(", run_id INTEGER"), strlen(cut + strlen(", run_id INTEGER")) + 1);
        }
        assert_int_equal(sqlite3_exec(conn, schema, NULL, NULL, NULL), SQLITE_OK);
        assert_int_equal(query_int(db, "SELECT count(*) FROM pragma_table_info('evaluations') WHERE name = 'run_id'"),
                         cases[i].run_id);
        snprintf(sql, sizeof(sql), rows_head, cases[i].run_id ? ", run_id" : "", cases[i].run_id ? ", 1" : "",
                 cases[i].run_id ? ", 1" : "");
        if (sqlite3_exec(conn, sql, NULL, NULL, NULL) != SQLITE_OK)
            fail_msg("%s: %s", cases[i].what, sqlite3_errmsg(conn));
        sqlite3_close(conn);
        assert_int_equal(query_int(db, "PRAGMA user_version"), 0);

        struct temper_store *s;
        if (temper_store_open(db, &s, msg, sizeof(msg)))
            fail_msg("%s: %s", cases[i].what, msg);
        assert_int_equal(query_int(db, "PRAGMA user_version"), TEMPER_STORE_SCHEMA_VERSION);
        /* Every row survived. */
        assert_int_equal(query_int(db, "SELECT count(*) FROM evaluations"), 2);
        assert_int_equal(query_int(db, "SELECT count(*) FROM candidates"), 1);
        assert_int_equal(query_int(db, "SELECT count(*) FROM runs"), 1);
        assert_query(db, "SELECT source FROM candidates", "old source");
        assert_query(db, "SELECT verdict || ' ' || median_ms FROM evaluations WHERE id = 1", "correct 1.5");
        assert_query(db, "SELECT result FROM evaluations WHERE id = 2", "not json");
        /* The new columns exist; device keys are rebuilt from each result's device description. */
        static const char *const new_columns[] = {"task_hash", "device_key", "parent_id", "operator", "client",
                                                  "batch_id", "run_id", "path"};
        for (size_t c = 0; c < sizeof(new_columns) / sizeof(new_columns[0]); c++) {
            snprintf(sql, sizeof(sql), "SELECT count(*) FROM pragma_table_info('evaluations') WHERE name = '%s'",
                     new_columns[c]);
            if (query_int(db, sql) != 1)
                fail_msg("%s: evaluations has no column %s", cases[i].what, new_columns[c]);
        }
        assert_int_equal(query_int(db, "SELECT count(*) FROM pragma_table_info('runs') WHERE name IN "
                                       "('task_hash', 'device_key')"),
                         2);
        assert_query(db, "SELECT device_key FROM evaluations WHERE id = 1", DEVICE_KEY);
        /* Results that name no file take the candidate's. */
        assert_query(db, "SELECT group_concat(path, ' ') FROM evaluations", "k.cl k.cl");
        assert_int_equal(query_int(db, "SELECT count(*) FROM evaluations WHERE id = 2 AND device_key IS NULL"), 1);
        assert_int_equal(query_int(db, "SELECT count(*) FROM evaluations WHERE task_hash IS NULL"), 2);
        /* The calibration is still found; the old result is not reused under any task content. */
        json_t *info = json_pack("{s:s, s:s, s:s}", "id", "opencl:0", "name", "X", "driver", "1");
        json_t *cal = temper_store_calibration(s, info);
        assert_non_null(cal);
        json_decref(cal);
        json_decref(info);
        json_t *got = temper_store_lookup(s, "00000000000000e1", TASK_HASH, DEVICE_KEY, "-DB=1");
        assert_null(got);
        /* New results go in beside the old ones; opening again changes nothing. */
        json_t *r = make_result("00000000000000e1", "correct", "k.cl", 1.0);
        assert_int_equal(temper_store_record(s, r, "old source", NULL, msg, sizeof(msg)), 0);
        json_decref(r);
        temper_store_close(s);
        assert_int_equal(temper_store_open(db, &s, msg, sizeof(msg)), 0);
        assert_int_equal(temper_store_count(s, NULL), 3);
        temper_store_close(s);
        assert_int_equal(query_int(db, "PRAGMA user_version"), TEMPER_STORE_SCHEMA_VERSION);
    }
}

/* The same source bytes evaluated from two files are one candidate, but each evaluation keeps its
 * own file (evaluations.path), and history names it. A store of version 5 (no such column) gets
 * it on open, each old row taking the file its result names, else the candidate's first one. */
static void test_evaluation_path(void **state)
{
    struct fixture *f = *state;
    char db[600], msg[512] = "";
    snprintf(db, sizeof(db), "%s/path.db", f->dir);
    struct temper_store *s;
    assert_int_equal(temper_store_open(db, &s, msg, sizeof(msg)), 0);
    const char *paths[] = {"first/k.cl", "second/k.cl"};
    for (int i = 0; i < 2; i++) {
        json_t *r = make_result("00000000000000f1", "correct", paths[i], 1.0 + i);
        assert_int_equal(temper_store_record(s, r, "same bytes", NULL, msg, sizeof(msg)), 0);
        json_decref(r);
    }
    assert_query(db, "SELECT group_concat(path, ' ') FROM (SELECT path FROM evaluations ORDER BY id)",
                 "first/k.cl second/k.cl");
    assert_query(db, "SELECT path FROM candidates", "first/k.cl");
    json_t *history = NULL;
    assert_int_equal(temper_store_history(s, "softmax", NULL, 0, &history, msg, sizeof(msg)), 0);
    int seen = 0;
    size_t i;
    json_t *row;
    json_array_foreach(history, i, row) { /* newest first */
        if (strcmp(json_string_value(json_object_get(row, "kind")), "evaluation"))
            continue;
        assert_string_equal(json_string_value(json_object_get(row, "candidate")), paths[1 - seen]);
        seen++;
    }
    assert_int_equal(seen, 2);
    json_decref(history);
    temper_store_close(s);

    /* Back to version 5: no path column, and a third row whose result is not JSON. */
    sqlite3 *conn;
    assert_int_equal(sqlite3_open(db, &conn), SQLITE_OK);
    if (sqlite3_exec(conn,
                     "ALTER TABLE evaluations DROP COLUMN path;"
                     "INSERT INTO evaluations(candidate, task, verdict, result, created_at) VALUES"
                     "  ('00000000000000f1', 'softmax', 'incorrect', 'not json', '2026-01-01T00:00:00Z');"
                     "PRAGMA user_version = 5;",
                     NULL, NULL, NULL) != SQLITE_OK)
        fail_msg("%s", sqlite3_errmsg(conn));
    sqlite3_close(conn);
    assert_int_equal(temper_store_open(db, &s, msg, sizeof(msg)), 0);
    temper_store_close(s);
    assert_int_equal(query_int(db, "PRAGMA user_version"), TEMPER_STORE_SCHEMA_VERSION);
    assert_query(db, "SELECT group_concat(path, ' ') FROM (SELECT path FROM evaluations ORDER BY id)",
                 "first/k.cl second/k.cl first/k.cl");
    assert_int_equal(query_int(db, "SELECT count(*) FROM evaluations"), 3);
}

/* A migration that fails is an error that stops the open, and leaves the store as it was: here
 * a version 1 store where someone already added a task_hash column by hand. */
static void test_failed_migration_changes_nothing(void **state)
{
    struct fixture *f = *state;
    char msg[2048] = "", db[600];
    snprintf(db, sizeof(db), "%s/v1.db", f->dir);
    sqlite3 *conn;
    assert_int_equal(sqlite3_open(db, &conn), SQLITE_OK);
    assert_int_equal(sqlite3_exec(conn, schema_head, NULL, NULL, NULL), SQLITE_OK);
    char rows[4096];
    snprintf(rows, sizeof(rows), rows_head, ", run_id", ", 1", ", 1");
    assert_int_equal(sqlite3_exec(conn, rows, NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(conn, "ALTER TABLE evaluations ADD COLUMN task_hash TEXT; PRAGMA user_version = 1",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(conn);
    struct temper_store *s = (struct temper_store *)1;
    assert_int_equal(temper_store_open(db, &s, msg, sizeof(msg)), TEMPER_ESTORE);
    assert_null(s);
    assert_contains(msg, db);
    assert_contains(msg, "migrating to schema version 2");
    assert_contains(msg, "duplicate column name: task_hash");
    char versions[64];
    snprintf(versions, sizeof(versions), "from schema version 1 to %d", TEMPER_STORE_SCHEMA_VERSION);
    assert_contains(msg, versions);
    assert_contains(msg, "the store is at version 1 with every row it had");
    assert_contains(msg, "TEMPER_HOME");
    /* Nothing of the step stayed: the version, the columns and the rows are as they were. */
    assert_int_equal(query_int(db, "PRAGMA user_version"), 1);
    assert_int_equal(query_int(db, "SELECT count(*) FROM pragma_table_info('evaluations') WHERE name = 'device_key'"),
                     0);
    assert_int_equal(query_int(db, "SELECT count(*) FROM evaluations"), 2);
}

/* A store made by a development build whose steps were numbered otherwise: at version 4 with the
 * agent's tables (benches as version 3, the agent as 4, no gym queue), or at version 3 with only
 * the agent's tables. It opens: the agent's tables and their rows are kept, the tables its
 * version counts as made but it lacks are made, and the version is the current one. A table of
 * the same name with other columns stops the open with a way out, and changes nothing. */
static void test_migrates_development_store(void **state)
{
    struct fixture *f = *state;
    /* Table: the development build's store. */
    static const struct {
        int version;           /* its user_version */
        const char *drop;      /* the tables it lacks */
        const char *change;    /* then this ("": nothing): an agent table unlike this temper's */
        const char *message;   /* "": opens; else the open fails saying this (the tables it lacks are made) */
    } cases[] = {
        {4, "DROP TABLE serve_jobs; DROP TABLE serve_cache; DROP TABLE serve_workers; DROP TABLE serve_counters;"
            "DROP TABLE serve_dead_letters;", "", ""},
        {3, "DROP TABLE serve_jobs; DROP TABLE serve_cache; DROP TABLE serve_workers; DROP TABLE serve_counters;"
            "DROP TABLE serve_dead_letters; DROP TABLE bench_evaluations; DROP TABLE benches;", "", ""},
        {4, "DROP TABLE serve_jobs;", "ALTER TABLE agent_sessions DROP COLUMN summary;"
            "ALTER TABLE agent_sessions ADD COLUMN note TEXT;",
         "its table agent_sessions is not the one this temper makes (it lacks summary TEXT; it has note TEXT"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char db[600], sql[1024], msg[2048] = "";
        snprintf(db, sizeof(db), "%s/dev%zu.db", f->dir, i);
        struct temper_store *s;
        assert_int_equal(temper_store_open(db, &s, msg, sizeof(msg)), 0);
        temper_store_close(s);
        sqlite3 *conn;
        assert_int_equal(sqlite3_open(db, &conn), SQLITE_OK);
        snprintf(sql, sizeof(sql),
                 "%s %s INSERT INTO agent_sessions(id, task, settings, summary, started_at) VALUES"
                 "  (7, 'softmax', '{}', NULL, '2026-01-01T00:00:00Z');"
                 "INSERT INTO agent_calls(session_id, attempt, request, created_at) VALUES (7, 1, '{}', 'x');"
                 "PRAGMA user_version = %d;",
                 cases[i].drop, cases[i].change, cases[i].version);
        if (*cases[i].change) /* the changed table has no summary column: insert without it */
            snprintf(sql, sizeof(sql),
                     "%s %s INSERT INTO agent_sessions(id, task, settings, started_at) VALUES"
                     "  (7, 'softmax', '{}', '2026-01-01T00:00:00Z');"
                     "INSERT INTO agent_calls(session_id, attempt, request, created_at) VALUES (7, 1, '{}', 'x');"
                     "PRAGMA user_version = %d;",
                     cases[i].drop, cases[i].change, cases[i].version);
        if (sqlite3_exec(conn, sql, NULL, NULL, NULL) != SQLITE_OK)
            fail_msg("case %zu: %s", i, sqlite3_errmsg(conn));
        sqlite3_close(conn);

        s = (struct temper_store *)1;
        int err = temper_store_open(db, &s, msg, sizeof(msg));
        if (!*cases[i].message) {
            if (err)
                fail_msg("case %zu: %s", i, msg);
            temper_store_close(s);
            assert_int_equal(query_int(db, "PRAGMA user_version"), TEMPER_STORE_SCHEMA_VERSION);
            assert_int_equal(query_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                                           "('serve_jobs', 'serve_dead_letters', 'benches', 'bench_evaluations')"),
                             4);
            assert_int_equal(query_int(db, "SELECT count(*) FROM serve_jobs"), 0);
        } else {
            assert_int_equal(err, TEMPER_ESTORE);
            assert_null(s);
            assert_contains(msg, db);
            assert_contains(msg, cases[i].message);
            snprintf(sql, sizeof(sql), "from schema version %d to %d", cases[i].version, TEMPER_STORE_SCHEMA_VERSION);
            assert_contains(msg, sql);
            assert_contains(msg, "ALTER TABLE agent_sessions RENAME TO agent_sessions_old");
            assert_contains(msg, "TEMPER_HOME");
            assert_int_equal(query_int(db, "PRAGMA user_version"), cases[i].version);
            assert_int_equal(query_int(db, "SELECT count(*) FROM pragma_table_info('agent_sessions') WHERE name = 'note'"),
                             1);
        }
        /* Nothing stored was lost. */
        assert_int_equal(query_int(db, "SELECT count(*) FROM agent_sessions WHERE id = 7 AND task = 'softmax'"), 1);
        assert_int_equal(query_int(db, "SELECT count(*) FROM agent_calls WHERE session_id = 7"), 1);
    }
}

/* A migration that cannot take the store's lock (another process writes, past the store's wait
 * of 10 s) says so with the versions and what to do, and changes nothing; once the lock is free
 * the store opens. */
static void test_migration_waits_for_the_lock(void **state)
{
    struct fixture *f = *state;
    char db[600], msg[2048] = "";
    snprintf(db, sizeof(db), "%s/locked.db", f->dir);
    struct temper_store *s;
    assert_int_equal(temper_store_open(db, &s, msg, sizeof(msg)), 0);
    temper_store_close(s);
    sqlite3 *conn;
    assert_int_equal(sqlite3_open(db, &conn), SQLITE_OK);
    assert_int_equal(sqlite3_exec(conn, "DROP TABLE serve_jobs; PRAGMA user_version = 4; BEGIN IMMEDIATE", NULL, NULL,
                                  NULL),
                     SQLITE_OK);
    s = (struct temper_store *)1;
    assert_int_equal(temper_store_open(db, &s, msg, sizeof(msg)), TEMPER_ESTORE);
    assert_null(s);
    assert_contains(msg, db);
    assert_contains(msg, "database is locked");
    char versions[96];
    snprintf(versions, sizeof(versions), "the store is at schema version 4, this temper needs %d",
             TEMPER_STORE_SCHEMA_VERSION);
    assert_contains(msg, versions);
    assert_contains(msg, "another process holds the store's lock");
    assert_int_equal(sqlite3_exec(conn, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(conn);
    assert_int_equal(query_int(db, "PRAGMA user_version"), 4);
    assert_int_equal(temper_store_open(db, &s, msg, sizeof(msg)), 0);
    temper_store_close(s);
    assert_int_equal(query_int(db, "PRAGMA user_version"), TEMPER_STORE_SCHEMA_VERSION);
    assert_int_equal(query_int(db, "SELECT count(*) FROM sqlite_master WHERE name = 'serve_jobs'"), 1);
}

/* A store written by a newer temper is refused, untouched (in WAL or rollback-journal mode), with a
 * message saying so. */
static void test_refuses_newer_schema(void **state)
{
    struct fixture *f = *state;
    char msg[512] = "", db[600];
    snprintf(db, sizeof(db), "%s/newer.db", f->dir);
    struct temper_store *s;
    assert_int_equal(temper_store_open(db, &s, msg, sizeof(msg)), 0);
    temper_store_close(s);
    sqlite3 *conn;
    assert_int_equal(sqlite3_open(db, &conn), SQLITE_OK);
    char sql[64];
    snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", TEMPER_STORE_SCHEMA_VERSION + 1);
    assert_int_equal(sqlite3_exec(conn, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(conn);
    s = (struct temper_store *)1;
    assert_int_equal(temper_store_open(db, &s, msg, sizeof(msg)), TEMPER_ESTORE);
    assert_null(s);
    assert_contains(msg, db);
    assert_contains(msg, "newer than this temper knows");
    assert_int_equal(query_int(db, "PRAGMA user_version"), TEMPER_STORE_SCHEMA_VERSION + 1);

    /* The same in rollback-journal mode (a store made by other tools, or a newer temper that
     * changed modes): refused before anything is written, its journal mode included. Every byte
     * and the modification time stay as they were, and no WAL file appears. */
    snprintf(db, sizeof(db), "%s/newer_rollback.db", f->dir);
    assert_int_equal(temper_store_open(db, &s, msg, sizeof(msg)), 0);
    temper_store_close(s);
    assert_int_equal(sqlite3_open(db, &conn), SQLITE_OK);
    snprintf(sql, sizeof(sql), "PRAGMA journal_mode=DELETE; PRAGMA user_version = %d", TEMPER_STORE_SCHEMA_VERSION + 1);
    assert_int_equal(sqlite3_exec(conn, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(conn);
    char wal[620];
    snprintf(wal, sizeof(wal), "%s-wal", db);
    struct stat before, after;
    assert_int_equal(stat(db, &before), 0);
    assert_int_equal(stat(wal, &after), -1);
    FILE *fp = fopen(db, "rb");
    assert_non_null(fp);
    char *bytes = malloc((size_t)before.st_size + 1), *again = malloc((size_t)before.st_size + 1);
    assert_non_null(bytes);
    assert_non_null(again);
    assert_int_equal(fread(bytes, 1, (size_t)before.st_size + 1, fp), (size_t)before.st_size);
    fclose(fp);
    s = (struct temper_store *)1;
    assert_int_equal(temper_store_open(db, &s, msg, sizeof(msg)), TEMPER_ESTORE);
    assert_null(s);
    assert_contains(msg, "newer than this temper knows");
    assert_int_equal(stat(db, &after), 0);
    assert_int_equal(after.st_size, before.st_size);
    assert_true(after.st_mtim.tv_sec == before.st_mtim.tv_sec && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
    fp = fopen(db, "rb");
    assert_non_null(fp);
    assert_int_equal(fread(again, 1, (size_t)before.st_size + 1, fp), (size_t)before.st_size);
    fclose(fp);
    assert_memory_equal(bytes, again, (size_t)before.st_size);
    free(bytes);
    free(again);
    assert_int_equal(stat(wal, &after), -1);
    assert_query(db, "PRAGMA journal_mode", "delete");
}

/* ---- failures ---- */

/* A file that is not a database, and one whose pages were overwritten, are named damaged with
 * the integrity check's words: on open, and when reading the best kernel. */
static void test_damaged_store(void **state)
{
    struct fixture *f = *state;
    char msg[1024] = "", db[600];
    snprintf(db, sizeof(db), "%s/junk.db", f->dir);
    FILE *fp = fopen(db, "wb");
    assert_non_null(fp);
    for (int i = 0; i < 8192; i++)
        fputc('x', fp);
    fclose(fp);
    struct temper_store *s;
    assert_int_equal(temper_store_open(db, &s, msg, sizeof(msg)), TEMPER_ESTORE);
    assert_contains(msg, "is damaged");
    assert_contains(msg, db);
    assert_contains(msg, "integrity_check says: file is not a database");

    /* A real store with its pages after the first overwritten. */
    snprintf(db, sizeof(db), "%s/broken.db", f->dir);
    assert_int_equal(temper_store_open(db, &s, msg, sizeof(msg)), 0);
    char source[2048];
    memset(source, 'k', sizeof(source) - 1);
    source[sizeof(source) - 1] = 0;
    for (int i = 0; i < 40; i++) {
        char hash[17];
        snprintf(hash, sizeof(hash), "%016x", 0xb000 + i);
        json_t *r = make_result(hash, "correct", "k.cl", 1.0 + i);
        assert_int_equal(temper_store_record(s, r, source, NULL, msg, sizeof(msg)), 0);
        json_decref(r);
    }
    temper_store_close(s);
    struct stat st;
    assert_int_equal(stat(db, &st), 0);
    int page = (int)query_int(db, "PRAGMA page_size");
    assert_true(st.st_size > 8 * page);
    fp = fopen(db, "r+b");
    assert_non_null(fp);
    fseek(fp, page, SEEK_SET);
    for (long i = page; i < st.st_size; i++)
        fputc(0xa5, fp);
    fclose(fp);
    int err = temper_store_open(db, &s, msg, sizeof(msg));
    if (!err) { /* the header is intact: the damage shows where pages are read */
        json_t *best = NULL;
        char *src = NULL;
        err = temper_store_best(s, "softmax", TASK_HASH, NULL, &best, &src, msg, sizeof(msg));
        assert_null(best);
        assert_null(src);
        char check[1024];
        assert_int_equal(temper_store_check(s, check, sizeof(check)), TEMPER_ESTORE);
        assert_contains(check, "is damaged; PRAGMA integrity_check says: ");
        temper_store_close(s);
    }
    assert_int_equal(err, TEMPER_ESTORE);
    assert_contains(msg, "is damaged");
    assert_contains(msg, "PRAGMA integrity_check says: ");
    assert_contains(msg, db);
}

/* $TEMPER_STORE_FAIL_AFTER=N: N writes, then each fails as a full disk would, naming the file;
 * what was written stays. */
static void test_injected_write_failure(void **state)
{
    struct fixture *f = *state;
    char msg[512] = "";
    struct temper_store *s;
    setenv("TEMPER_STORE_FAIL_AFTER", "bogus", 1);
    assert_int_equal(temper_store_open(NULL, &s, msg, sizeof(msg)), TEMPER_EINVALID);
    assert_contains(msg, "TEMPER_STORE_FAIL_AFTER");
    setenv("TEMPER_STORE_FAIL_AFTER", "2", 1);
    assert_int_equal(temper_store_open(NULL, &s, msg, sizeof(msg)), 0);
    unsetenv("TEMPER_STORE_FAIL_AFTER");
    json_t *r = make_result("00000000000000f1", "correct", "k.cl", 1.0);
    int64_t id = 0;
    assert_int_equal(temper_store_record(s, r, "src", &id, msg, sizeof(msg)), 0);
    json_t *settings = json_pack("{s:s, s:s}", "source_hash", "00000000000000f1", "device", "opencl:0");
    int64_t run = 0;
    assert_int_equal(temper_store_run_begin(s, settings, &run, msg, sizeof(msg)), 0);
    id = -1;
    assert_int_equal(temper_store_record(s, r, "src", &id, msg, sizeof(msg)), TEMPER_ESTORE);
    assert_int_equal(id, -1);
    assert_contains(msg, f->db);
    assert_contains(msg, "recording the evaluation");
    assert_int_equal(temper_store_run_finish(s, run, settings, msg, sizeof(msg)), TEMPER_ESTORE);
    assert_contains(msg, "finishing the run");
    assert_int_equal(temper_store_count(s, NULL), 1);
    temper_store_close(s);
    /* Opened again without the variable, the store takes writes. */
    assert_int_equal(temper_store_open(NULL, &s, msg, sizeof(msg)), 0);
    assert_int_equal(temper_store_run_finish(s, run, settings, msg, sizeof(msg)), 0);
    assert_int_equal(temper_store_record(s, r, "src", NULL, msg, sizeof(msg)), 0);
    assert_int_equal(temper_store_count(s, NULL), 2);
    json_decref(settings);
    json_decref(r);
    temper_store_close(s);
}

/* ---- the task content hash ---- */

static void write_text(const char *dir, const char *name, const char *text)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static void content_hash(const char *dir, char hex[17])
{
    struct temper_task task;
    char msg[1024];
    if (temper_task_load(dir, &task, msg, sizeof(msg)) || temper_task_content_hash(&task, hex, msg, sizeof(msg)))
        fail_msg("%s", msg);
}

/* The hash changes with task.json, the reference and a baseline, and with nothing else. */
static void test_task_content_hash(void **state)
{
    struct fixture *f = *state;
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/copy", f->dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    static const char task_json[] =
        "{\"name\": \"copy\", \"level\": 1, \"summary\": \"y = x\",\n"
        " \"args\": [{\"name\": \"y\", \"role\": \"output\", \"dtype\": \"f32\", \"shape\": [\"N\"]},\n"
        "          {\"name\": \"x\", \"role\": \"input\", \"dtype\": \"f32\", \"shape\": [\"N\"]},\n"
        "          {\"name\": \"N\", \"role\": \"scalar\", \"dtype\": \"i32\"}],\n"
        " \"flops\": \"0\", \"bytes\": \"8*N\", \"tolerance\": {\"atol\": %s, \"rtol\": 0},\n"
        " \"shapes\": {\"check\": [{\"N\": 7}], \"bench\": {\"gpu\": [{\"N\": 1024}], \"cpu\": [{\"N\": 1024}]}},\n"
        " \"reference\": \"reference.c\", \"baseline\": {\"opencl\": \"naive.cl\"}}\n";
    char text[2048];
    snprintf(text, sizeof(text), task_json, "0");
    write_text(dir, "task.json", text);
    write_text(dir, "reference.c", "void reference(double **o, const double **i, const long long *s) {}\n");
    write_text(dir, "naive.cl", "// naive\n");
    char base[17], again[17];
    content_hash(dir, base);
    content_hash(dir, again);
    assert_string_equal(base, again);
    /* Table: a change -> whether the hash changes. */
    static const struct {
        const char *file; /* what is rewritten */
        const char *text; /* with this; NULL for task.json with another tolerance */
        int changes;      /* 1: another hash */
    } cases[] = {
        {"fast.cl", "// another candidate beside the task\n", 0},
        {"task.json", NULL, 1},
        {"reference.c", "void reference(double **o, const double **i, const long long *s) { }\n", 1},
        {"naive.cl", "// naive, changed\n", 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        content_hash(dir, base);
        if (cases[i].text) {
            write_text(dir, cases[i].file, cases[i].text);
        } else {
            snprintf(text, sizeof(text), task_json, "1e-6");
            write_text(dir, "task.json", text);
        }
        content_hash(dir, again);
        if ((strcmp(base, again) != 0) != cases[i].changes)
            fail_msg("rewriting %s: hash %s then %s", cases[i].file, base, again);
    }
    /* An unreadable reference is an error naming it, not a hash of less. */
    struct temper_task task;
    char msg[1024], hex[17];
    assert_int_equal(temper_task_load(dir, &task, msg, sizeof(msg)), 0);
    char ref[700];
    snprintf(ref, sizeof(ref), "%s/reference.c", dir);
    assert_int_equal(remove(ref), 0);
    assert_true(temper_task_content_hash(&task, hex, msg, sizeof(msg)) != 0);
    assert_contains(msg, "reference.c");
}

/* ---- threads ---- */

/* What one recording thread does. */
struct recorder {
    struct temper_store *store; /* shared by every thread */
    int index;                  /* which thread */
    int failures;               /* records that failed */
    char msg[512];              /* the first failure's message */
};

static void *record_many(void *arg)
{
    struct recorder *r = arg;
    for (int i = 0; i < 50; i++) {
        char hash[17];
        snprintf(hash, sizeof(hash), "%08x%08x", r->index, i);
        json_t *res = make_result(hash, i % 2 ? "correct" : "incorrect", "t.cl", 1.0 + i);
        char msg[512];
        if (temper_store_record(r->store, res, "src", NULL, msg, sizeof(msg)) && !r->failures++)
            snprintf(r->msg, sizeof(r->msg), "%s", msg);
        json_t *got = temper_store_lookup(r->store, hash, TASK_HASH, DEVICE_KEY, "-DBLOCK=256 -DVEC=4");
        if (!got && !r->failures++)
            snprintf(r->msg, sizeof(r->msg), "%s: not found after recording it", hash);
        json_decref(got);
        json_decref(res);
    }
    return NULL;
}

/* Four threads recording and reading through one store: every write is its own transaction. */
static void test_threads_share_a_store(void **state)
{
    (void)state;
    char msg[512] = "";
    struct temper_store *s;
    assert_int_equal(temper_store_open(NULL, &s, msg, sizeof(msg)), 0);
    pthread_t threads[4];
    struct recorder recorders[4];
    for (int i = 0; i < 4; i++) {
        recorders[i] = (struct recorder){s, i, 0, ""};
        assert_int_equal(pthread_create(&threads[i], NULL, record_many, &recorders[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(threads[i], NULL);
        if (recorders[i].failures)
            fail_msg("thread %d: %d failures, the first: %s", i, recorders[i].failures, recorders[i].msg);
    }
    assert_int_equal(temper_store_count(s, NULL), 200);
    assert_int_equal(temper_store_count(s, "correct"), 100);
    temper_store_close(s);
}

/* ---- known bugs: each checks the correct behaviour (see CMakeLists.txt) ---- */

/* temper_store_record dumps `json_object_get(r, "knobs") ?: json_object()` (and the same for
 * checks and timings) and never releases the empty value it made: a leak for every result that
 * lacks one of them, e.g. a compile_error result without timings. */
static void bug_record_leaks_default_json(void **state)
{
    (void)state;
    char msg[512] = "";
    struct temper_store *s;
    assert_int_equal(temper_store_open(NULL, &s, msg, sizeof(msg)), 0);
    json_t *full = make_result("6666666666666666", "correct", "f.cl", 1.0);
    json_t *bare = make_result("7777777777777777", "compile_error", "g.cl", 1.0);
    json_object_del(bare, "knobs");
    json_object_del(bare, "checks");
    json_object_del(bare, "timings");
    /* The library frees json_dumps text with free(), which the counter does not see, so compare
     * a result with every field against one without: the difference is what leaked. */
    long before = json_live;
    assert_int_equal(temper_store_record(s, full, "src", NULL, msg, sizeof(msg)), 0);
    long with_fields = json_live - before;
    before = json_live;
    assert_int_equal(temper_store_record(s, bare, "src", NULL, msg, sizeof(msg)), 0);
    long without_fields = json_live - before;
    json_decref(full);
    json_decref(bare);
    temper_store_close(s);
    if (without_fields != with_fields)
        fail_msg("recording a result without knobs, checks and timings left %ld more jansson allocations",
                 without_fields - with_fields);
}

int main(int argc, char **argv)
{
    json_set_alloc_funcs(counting_malloc, counting_free);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_open_creates_wal_store, store_setup, store_teardown),
        cmocka_unit_test_setup_teardown(test_home_not_a_folder, store_setup, store_teardown),
        cmocka_unit_test_setup_teardown(test_record_source_keeps_every_byte, store_setup, store_teardown),
        cmocka_unit_test_setup_teardown(test_record_and_count, store_setup, store_teardown),
        cmocka_unit_test_setup_teardown(test_lookup_needs_a_timing, store_setup, store_teardown),
        cmocka_unit_test_setup_teardown(test_calibration, store_setup, store_teardown),
        cmocka_unit_test_setup_teardown(test_refused_results_store_nothing, store_setup, store_teardown),
        cmocka_unit_test_setup_teardown(test_keys_task_content_and_device, store_setup, store_teardown),
        cmocka_unit_test_setup_teardown(test_best_drops_a_configuration_now_failing, store_setup, store_teardown),
        cmocka_unit_test_setup_teardown(test_best_takes_the_retiming, store_setup, store_teardown),
        cmocka_unit_test_setup_teardown(test_device_key, store_setup, store_teardown),
        cmocka_unit_test_setup_teardown(test_calibration_by_identity, store_setup, store_teardown),
        cmocka_unit_test_setup_teardown(test_lineage, store_setup, store_teardown),
        cmocka_unit_test_setup_teardown(test_evaluation_path, store_setup, store_teardown),
        cmocka_unit_test_setup_teardown(test_migrates_previous_schema, store_setup, store_teardown),
        cmocka_unit_test_setup_teardown(test_refuses_newer_schema, store_setup, store_teardown),
        cmocka_unit_test_setup_teardown(test_migrates_development_store, store_setup, store_teardown),
        cmocka_unit_test_setup_teardown(test_migration_waits_for_the_lock, store_setup, store_teardown),
        cmocka_unit_test_setup_teardown(test_failed_migration_changes_nothing, store_setup, store_teardown),
        cmocka_unit_test_setup_teardown(test_damaged_store, store_setup, store_teardown),
        cmocka_unit_test_setup_teardown(test_injected_write_failure, store_setup, store_teardown),
        cmocka_unit_test_setup_teardown(test_task_content_hash, store_setup, store_teardown),
        cmocka_unit_test_setup_teardown(test_threads_share_a_store, store_setup, store_teardown),
    };
    const struct CMUnitTest known_bugs[] = {
        cmocka_unit_test_setup_teardown(bug_record_leaks_default_json, store_setup, store_teardown),
    };
    if (argc == 3 && !strcmp(argv[1], "--known-bug"))
        return unit_run_known_bug("store known bugs", known_bugs, sizeof(known_bugs) / sizeof(known_bugs[0]),
                                  argv[2]);
    return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}
