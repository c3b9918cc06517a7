/* session_bytes_test.c: a session judges every byte of a candidate, through both ways a request
 * gives one (source text with its length, and a file). The suite's vector_add naive.cl followed
 * by a NUL byte, junk and an include must be `invalid`, the message naming the NUL's byte offset
 * and line; its source_hash must be over all the bytes (not naive.cl's), and the store must keep
 * all of them. Before the session carried the length, the text was cut at the NUL and judged
 * `correct` as naive.cl. Runs on the OpenCL device (PoCL here); exits 77 when none answers.
 * usage: session_bytes_test SOURCE_DIR */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "temper/session.h"
#include "util/util.h"

static int failures;

#define CHECK(cond, ...)                                                                                         \
    do {                                                                                                         \
        if (!(cond)) {                                                                                           \
            failures++;                                                                                          \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                                 \
            fprintf(stderr, __VA_ARGS__);                                                                        \
            fprintf(stderr, "\n");                                                                               \
        }                                                                                                        \
    } while (0)

/* The stored source's length in bytes for the candidate of this hash, or -1. */
static long long stored_length(const char *db_path, const char *hash)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    long long n = -1;
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT length(CAST(source AS BLOB)) FROM candidates WHERE hash = ?", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, hash, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) == SQLITE_ROW)
            n = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

/* Submits one request, waits for its result and checks it against the source's bytes. */
static void check_one(struct temper_session *s, const struct temper_session_request *req, const char *what,
                      const char *text, size_t len, size_t nul_at, int nul_line, const char *db_path)
{
    int64_t id = 0;
    json_t *r = NULL;
    char msg[2048];
    if (temper_session_submit(s, req, &id, msg, sizeof(msg)) || temper_session_wait(s, id, &r, msg, sizeof(msg))) {
        CHECK(0, "%s: %s", what, msg);
        return;
    }
    const char *verdict = temper_session_result_verdict(r);
    const char *message = json_string_value(json_object_get(r, "message"));
    char want[128], hex[17];
    snprintf(want, sizeof(want), "NUL byte at byte offset %zu (line %d)", nul_at, nul_line);
    CHECK(verdict && !strcmp(verdict, "invalid"), "%s: verdict %s, not invalid", what, verdict ? verdict : "(none)");
    CHECK(message && strstr(message, want), "%s: the message '%s' does not say '%s'", what,
          message ? message : "(none)", want);
    temper_hash_hex(temper_hash64(text, len, 0), hex);
    const char *got = json_string_value(json_object_get(r, "source_hash"));
    CHECK(got && !strcmp(got, hex), "%s: source_hash %s, not %s (the hash of all %zu bytes)", what,
          got ? got : "(none)", hex, len);
    CHECK(temper_session_result_store_id(r) > 0, "%s: not stored (%s)", what,
          temper_session_result_store_error(r) ? temper_session_result_store_error(r) : "no store id");
    long long stored = stored_length(db_path, hex);
    CHECK(stored == (long long)len, "%s: the store keeps %lld bytes of its source, not %zu", what, stored, len);
    json_decref(r);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: session_bytes_test SOURCE_DIR\n");
        return 2;
    }
    char tmp[] = "/tmp/temper-session-bytes-XXXXXX";
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    char naive_path[4096], tasks[4096], db_path[4200], file_path[4200], msg[2048];
    snprintf(naive_path, sizeof(naive_path), "%s/tasks/L1/vector_add/naive.cl", argv[1]);
    snprintf(tasks, sizeof(tasks), "%s/tasks", argv[1]);
    snprintf(db_path, sizeof(db_path), "%s/temper.db", tmp);
    snprintf(file_path, sizeof(file_path), "%s/X.cl", tmp);
    char *naive = NULL;
    size_t naive_len = 0;
    if (temper_read_file(naive_path, 1 << 20, &naive, &naive_len, msg, sizeof(msg))) {
        fprintf(stderr, "%s\n", msg);
        return 1;
    }
    static const char tail[] = "\0junk\n#include <stdio.h>\n";
    size_t len = naive_len + sizeof(tail) - 1;
    char *text = malloc(len + 1);
    if (!text)
        return 1;
    memcpy(text, naive, naive_len);
    memcpy(text + naive_len, tail, sizeof(tail));
    int line = 1;
    for (size_t i = 0; i < naive_len; i++)
        line += naive[i] == '\n';
    FILE *f = fopen(file_path, "wb");
    if (!f || fwrite(text, 1, len, f) != len || fclose(f)) {
        perror(file_path);
        return 1;
    }

    struct temper_session_config config = {.device = "opencl", .store_path = db_path, .tasks_dir = tasks};
    struct temper_session *s = NULL;
    int err = temper_session_open(&config, &s, msg, sizeof(msg));
    if (err == TEMPER_ENODEVICE) {
        printf("skipped: no OpenCL device (%s)\n", msg);
        return 77;
    }
    if (err) {
        fprintf(stderr, "session: %s\n", msg);
        return 1;
    }
    struct temper_session_request as_text = {.path = "with_nul", .source = text, .source_len = len,
                                             .lang = "opencl", .no_timing = 1};
    check_one(s, &as_text, "source text", text, len, naive_len, line, db_path);
    struct temper_session_request as_file = {.path = file_path, .no_timing = 1};
    check_one(s, &as_file, "file", text, len, naive_len, line, db_path);
    temper_session_close(s);

    unlink(file_path);
    unlink(db_path);
    char side[4300];
    snprintf(side, sizeof(side), "%s-wal", db_path);
    unlink(side);
    snprintf(side, sizeof(side), "%s-shm", db_path);
    unlink(side);
    rmdir(tmp);
    free(text);
    free(naive);
    if (failures) {
        fprintf(stderr, "%d failure(s)\n", failures);
        return 1;
    }
    printf("ok: a NUL byte is invalid through source text and a file, hashed and stored whole\n");
    return 0;
}
