/* knowledge.c: the knowledge base behind the agent's retrieved examples: an in-memory SQLite
 * FTS5 index, built per search, over the guides in the Markdown files of knowledge/ and the store's best kernel of
 * each task and device (read through a read-only connection, so a search never writes). */
#include <ctype.h>
#include <dirent.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "temper/error.h"
#include "agent/knowledge.h"
#include "temper/task.h"
#include "util/util.h"

/* The most a guide may hold. */
#define GUIDE_MAX (64u << 10)

/* The guides' folder: the config's, $TEMPER_KNOWLEDGE, the installed one, or the one beside the
 * running program's ../share. Writes it to out; 0 if none exists. */
static int guides_dir(const struct temper_knowledge_config *c, char *out, size_t size)
{
    const char *d = c && c->dir ? c->dir : getenv("TEMPER_KNOWLEDGE");
    struct stat st;
    if (d && *d) {
        snprintf(out, size, "%s", d);
        return stat(out, &st) == 0 && S_ISDIR(st.st_mode);
    }
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = 0;
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = 0;
            snprintf(out, size, "%.3900s/../share/temper/knowledge", self);
            if (stat(out, &st) == 0 && S_ISDIR(st.st_mode))
                return 1;
        }
    }
#ifdef TEMPER_KNOWLEDGE_DATADIR
    snprintf(out, size, "%s", TEMPER_KNOWLEDGE_DATADIR);
    return stat(out, &st) == 0 && S_ISDIR(st.st_mode);
#else
    return 0;
#endif
}

int temper_knowledge_dir(const struct temper_knowledge_config *config, char *out, size_t out_size)
{
    return guides_dir(config, out, out_size);
}

static int insert(sqlite3 *db, const char *kind, const char *title, const char *body, const char *ref,
                  const char *task, const char *device, double median_ms)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "INSERT INTO k(kind, title, body, ref, task, device, median_ms) VALUES(?,?,?,?,?,?,?)", -1,
                           &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, title, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, body, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, ref, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, task ? task : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, device ? device : "", -1, SQLITE_STATIC);
    if (median_ms > 0)
        sqlite3_bind_double(st, 7, median_ms);
    else
        sqlite3_bind_null(st, 7);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds every *.md of the folder, in name order; the title is its first '# ' line. */
static int add_guides(sqlite3 *db, const char *dir, char *msg, size_t msg_size)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    char *names[256];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256) {
        size_t len = strlen(e->d_name);
        if (len > 3 && !strcmp(e->d_name + len - 3, ".md") && e->d_name[0] != '.')
            names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof(names[0]), cmp_names);
    int err = 0;
    for (int i = 0; i < n; i++) {
        char path[4600], *text = NULL;
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        if (!err && !(err = temper_read_file(path, GUIDE_MAX, &text, NULL, msg, msg_size))) {
            char title[256];
            const char *h = !strncmp(text, "# ", 2) ? text + 2 : NULL;
            snprintf(title, sizeof(title), "%.*s", h ? (int)strcspn(h, "\n") : (int)strlen(names[i]) - 3,
                     h ? h : names[i]);
            char ref[300];
            snprintf(ref, sizeof(ref), "knowledge/%s", names[i]);
            if (insert(db, "guide", title, text, ref, NULL, NULL, 0))
                err = temper_fail(msg, msg_size, TEMPER_ESTORE, "indexing %s: %s", path, sqlite3_errmsg(db));
        }
        free(text);
        free(names[i]);
    }
    return err;
}

/* Adds the fastest correct, timed kernel of each task on each device from the store. */
static int add_kernels(sqlite3 *db, const char *store_path, const struct temper_knowledge_config *c)
{
    struct stat st;
    if (!store_path || !*store_path || stat(store_path, &st))
        return 0;
    sqlite3 *s;
    if (sqlite3_open_v2(store_path, &s, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(s);
        return 0; /* a store that cannot be read gives nothing; the search still answers */
    }
    sqlite3_busy_timeout(s, 5000);
    sqlite3_stmt *q;
    /* the fastest of each task on each device, found once over the table (a window, not a
     * subquery per row), then joined to its source; each configuration counts with its latest
     * timed evaluation of any verdict, as temper_store_best counts it (a re-timing, not a screening
     * sample; one found wrong in a later run drops out) */
    const char *sql =
        "WITH latest AS (SELECT max(id) AS id FROM evaluations WHERE (verdict != 'correct' OR median_ms > 0)"
        "  AND task_hash IS NOT NULL GROUP BY task, candidate, coalesce(options, ''), device_key, task_hash),"
        " b AS (SELECT e.id, row_number() OVER (PARTITION BY e.task, e.task_hash, e.device_key ORDER BY e.median_ms,"
        "  e.id) AS rn FROM latest l JOIN evaluations e ON e.id = l.id WHERE e.verdict = 'correct' AND e.median_ms > 0)"
        " SELECT e.task, e.device, e.id, e.median_ms, c.source, e.device_key, e.task_hash FROM b"
        " JOIN evaluations e ON e.id = b.id JOIN candidates c ON c.hash = e.candidate"
        " WHERE b.rn = 1 ORDER BY e.task, e.device_key";
    /* Only kernels judged against the task as it is now (its content hash): one judged against an
     * older task may be wrong for this one. The hash of the task in hand is kept (rows come by task). */
    char hash_task[64] = "", hash[17] = "", why[512];
    if (sqlite3_prepare_v2(s, sql, -1, &q, NULL) == SQLITE_OK) {
        while (sqlite3_step(q) == SQLITE_ROW) {
            const char *task = (const char *)sqlite3_column_text(q, 0);
            const char *device = (const char *)sqlite3_column_text(q, 1);
            const char *source = (const char *)sqlite3_column_text(q, 4);
            const char *key = (const char *)sqlite3_column_text(q, 5);
            const char *judged = (const char *)sqlite3_column_text(q, 6);
            if (!task || !source || !judged)
                continue;
            if (strcmp(hash_task, task)) {
                snprintf(hash_task, sizeof(hash_task), "%s", task);
                if (temper_task_content_hash_named(temper_tasks_root(NULL), task, hash, why, sizeof(why)))
                    hash[0] = 0; /* a task no longer found: none of its kernels */
            }
            if (strcmp(hash, judged))
                continue;
            int cuda = strstr(source, "__global__") != NULL;
            if (c && c->lang && strcmp(c->lang, cuda ? "cuda" : "opencl"))
                continue;
            if (c && c->device && (!device || strcmp(c->device, device)))
                continue;
            char title[512], ref[64];
            snprintf(title, sizeof(title), "the best %s kernel of %s on %s", cuda ? "cuda" : "opencl", task,
                     key ? key : device ? device : "?");
            snprintf(ref, sizeof(ref), "eval %lld", (long long)sqlite3_column_int64(q, 2));
            insert(db, "kernel", title, source, ref, task, device, sqlite3_column_double(q, 3));
        }
        sqlite3_finalize(q);
    }
    sqlite3_close(s);
    return 0;
}

/* The FTS5 query for free text: each word quoted, any of them. Caller frees; NULL if no word. */
static char *fts_query(const char *text)
{
    struct temper_buf b;
    temper_buf_init(&b, 8192);
    for (const char *p = text; *p;) {
        while (*p && !isalnum((unsigned char)*p))
            p++;
        const char *w = p;
        while (isalnum((unsigned char)*p))
            p++;
        if (p > w && b.len < 4000)
            temper_buf_printf(&b, "%s\"%.*s\"", b.len ? " OR " : "", (int)(p - w), w);
    }
    char *q = b.len ? strdup(b.data) : NULL;
    temper_buf_free(&b);
    return q;
}

int temper_knowledge_search(const struct temper_knowledge_config *c, const char *query, int limit, json_t **hits,
                            char *msg, size_t msg_size)
{
    *hits = NULL;
    char *q = fts_query(query ? query : "");
    if (!q)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "the query '%s' has no words to search for", query ? query : "");
    sqlite3 *db;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK) {
        free(q);
        sqlite3_close(db);
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "opening an in-memory database failed");
    }
    int err = 0;
    if (sqlite3_exec(db,
                     "CREATE VIRTUAL TABLE k USING fts5(kind UNINDEXED, title, body, ref UNINDEXED, task,"
                     " device UNINDEXED, median_ms UNINDEXED, tokenize = 'porter unicode61')",
                     NULL, NULL, NULL) != SQLITE_OK)
        err = temper_fail(msg, msg_size, TEMPER_EUNSUPPORTED, "this SQLite has no FTS5: %s", sqlite3_errmsg(db));
    char dir[4096], home[4096], store[4200];
    if (!err && guides_dir(c, dir, sizeof(dir)))
        err = add_guides(db, dir, msg, msg_size);
    const char *store_path = c ? c->store_path : NULL;
    if (!store_path) {
        snprintf(store, sizeof(store), "%s/temper.db", temper_home_dir(home, sizeof(home)));
        store_path = store;
    }
    if (!err)
        err = add_kernels(db, store_path, c);
    sqlite3_stmt *st = NULL;
    /* bm25 weights: a title word counts five times a body word, the task's name ten times; the
     * named task's own kernels come first */
    if (!err && sqlite3_prepare_v2(db,
                                   "SELECT kind, title, ref, body, bm25(k, 0, 5.0, 1.0, 0, 10.0) AS r, task, device,"
                                   " median_ms FROM k WHERE k MATCH ? ORDER BY (task = ? AND kind = 'kernel') DESC, r"
                                   " LIMIT ?",
                                   -1, &st, NULL) != SQLITE_OK)
        err = temper_fail(msg, msg_size, TEMPER_EINVALID, "searching: %s", sqlite3_errmsg(db));
    if (!err) {
        sqlite3_bind_text(st, 1, q, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, c && c->task ? c->task : "", -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 3, limit > 0 ? limit : 5);
        json_t *out = json_array();
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            json_t *h = json_pack("{s:s, s:s, s:s, s:s, s:f}", "kind", sqlite3_column_text(st, 0), "title",
                                  sqlite3_column_text(st, 1), "ref", sqlite3_column_text(st, 2), "text",
                                  sqlite3_column_text(st, 3), "rank", sqlite3_column_double(st, 4));
            if (h && !strcmp((const char *)sqlite3_column_text(st, 0), "kernel")) {
                json_object_set_new(h, "task", json_string((const char *)sqlite3_column_text(st, 5)));
                json_object_set_new(h, "device", json_string((const char *)sqlite3_column_text(st, 6)));
                json_object_set_new(h, "median_ms", json_real(sqlite3_column_double(st, 7)));
            }
            json_array_append_new(out, h);
        }
        if (rc != SQLITE_DONE) {
            err = temper_fail(msg, msg_size, TEMPER_EINVALID, "searching for '%s': %s", query, sqlite3_errmsg(db));
            json_decref(out);
        } else {
            *hits = out;
        }
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    free(q);
    return err;
}

int temper_knowledge_prompt(const struct temper_knowledge_config *c, const char *query, int limit, size_t max_chars,
                            char **text, char *msg, size_t msg_size)
{
    *text = NULL;
    json_t *hits;
    int err = temper_knowledge_search(c, query, limit, &hits, msg, msg_size);
    if (err)
        return err;
    struct temper_buf b;
    temper_buf_init(&b, max_chars + 4096);
    size_t i;
    json_t *h;
    size_t share = json_array_size(hits) ? max_chars / json_array_size(hits) : max_chars;
    json_array_foreach(hits, i, h)
    {
        const char *kind = json_string_value(json_object_get(h, "kind"));
        const char *body = json_string_value(json_object_get(h, "text"));
        size_t n = strlen(body), cut = n > share ? share : n;
        /* cut at a line's end where one is near */
        for (size_t k = cut; cut < n && k > cut * 3 / 4; k--)
            if (body[k] == '\n') {
                cut = k;
                break;
            }
        int kernel = !strcmp(kind, "kernel");
        temper_buf_printf(&b, "### %s: %s (%s", kind, json_string_value(json_object_get(h, "title")),
                          json_string_value(json_object_get(h, "ref")));
        if (kernel)
            temper_buf_printf(&b, ", %.4g ms", json_number_value(json_object_get(h, "median_ms")));
        temper_buf_printf(&b, ")\n%s%.*s%s%s\n", kernel ? "```\n" : "", (int)cut, body,
                          cut < n ? "\n[... cut]" : "", kernel ? "\n```" : "");
    }
    json_decref(hits);
    *text = strdup(b.data ? b.data : "");
    temper_buf_free(&b);
    return *text ? 0 : temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
}
