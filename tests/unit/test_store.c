/* test_store.c: unit tests of store.h on a real SQLite file in a fresh folder under /tmp: WAL
 * mode, recording results (a candidate stored once), counts by verdict, device calibrations,
 * and refused results that store nothing. Rows are checked with sqlite3 directly. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <ftw.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "temper/error.h"
#include "temper/store.h"

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

/* A result object as temper_eval returns it (the fields the store reads). */
static json_t *make_result(const char *hash, const char *verdict, const char *path, double median_ms)
{
    json_t *r = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:{s:s, s:s}, s:[{s:s, s:i}], "
                          "s:[{s:s, s:f, s:f, s:f}], s:i, s:i}",
                          "source_hash", hash, "task", "softmax", "candidate", path, "verdict", verdict, "message",
                          "all good", "device", "opencl:0", "options", "-DBLOCK=256 -DVEC=4", "knobs", "BLOCK",
                          "256", "VEC", "4", "checks", "shape", "R=7 C=1000", "mismatches", 0, "timings", "shape",
                          "R=65536 C=4096", "median_ms", median_ms, "speedup", 1.5, "roofline_share", 0.25, "seed",
                          7, "secret_seed", 99);
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
        json_t *got = temper_store_lookup(s, hash, "opencl:0", "-DBLOCK=256 -DVEC=4");
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
    json_t *got = temper_store_lookup(s, "00000000000000ff", "opencl:0", "-DBLOCK=256 -DVEC=4");
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
        cmocka_unit_test_setup_teardown(test_record_and_count, store_setup, store_teardown),
        cmocka_unit_test_setup_teardown(test_lookup_needs_a_timing, store_setup, store_teardown),
        cmocka_unit_test_setup_teardown(test_calibration, store_setup, store_teardown),
        cmocka_unit_test_setup_teardown(test_refused_results_store_nothing, store_setup, store_teardown),
    };
    const struct CMUnitTest known_bugs[] = {
        cmocka_unit_test_setup_teardown(bug_record_leaks_default_json, store_setup, store_teardown),
    };
    if (argc == 3 && !strcmp(argv[1], "--known-bug"))
        return unit_run_known_bug("store known bugs", known_bugs, sizeof(known_bugs) / sizeof(known_bugs[0]),
                                  argv[2]);
    return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}
