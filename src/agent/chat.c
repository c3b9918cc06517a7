/* chat.c: the agent's chat client on libcurl, for OpenAI-compatible chat completions and
 * Anthropic's Messages API: the request body, the reply's reading (reasoning kept apart from
 * the answer), and the retries: exponential backoff with full jitter on 429, 5xx and connection
 * errors, Retry-After honoured, quota and billing errors never retried. */
#include <curl/curl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/agent.h"
#include "temper/error.h"
#include "util/util.h"

/* The most an answer's body may hold. */
#define CHAT_BODY_MAX (16u << 20)

/* A configured client. */
struct temper_chat {
    struct temper_chat_config cfg; /* the configuration, its strings pointing at the copies below */
    char *endpoint;                /* copied */
    char *model;                   /* copied */
    char *key;                     /* the key's value, or NULL; never written anywhere but a header */
    int use_completion_tokens;     /* 1: the endpoint wants max_completion_tokens */
    int no_temperature;            /* 1: the endpoint refused a temperature (OpenAI's reasoning models) */
    struct temper_rng rng;         /* the jitter */
    CURL *curl;                    /* reused between calls (keeps connections) */
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

int temper_chat_api_parse(const char *name)
{
    if (name && !strcmp(name, "openai"))
        return TEMPER_CHAT_OPENAI;
    if (name && !strcmp(name, "anthropic"))
        return TEMPER_CHAT_ANTHROPIC;
    return -1;
}

const char *temper_chat_api_name(enum temper_chat_api api)
{
    return api == TEMPER_CHAT_ANTHROPIC ? "anthropic" : "openai";
}

int temper_chat_open(const struct temper_chat_config *config, struct temper_chat **out, char *msg, size_t msg_size)
{
    *out = NULL;
    if (!config->endpoint || !*config->endpoint)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "no endpoint: give the model's base URL (--endpoint URL)");
    if (strncmp(config->endpoint, "http://", 7) && strncmp(config->endpoint, "https://", 8))
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "endpoint '%s': not an http:// or https:// URL",
                           config->endpoint);
    if (!config->model || !*config->model)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "no model: name the model the endpoint serves (--model M)");
    const char *key = NULL;
    if (config->key_env && *config->key_env) {
        key = getenv(config->key_env);
        if (!key || !*key)
            return temper_fail(msg, msg_size, TEMPER_EINVALID,
                               "the key's environment variable %s is not set (or empty)", config->key_env);
    }
    pthread_once(&curl_once, curl_init_once);
    struct temper_chat *c = calloc(1, sizeof(*c));
    if (!c)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    c->cfg = *config;
    c->endpoint = strdup(config->endpoint);
    c->model = strdup(config->model);
    c->key = key ? strdup(key) : NULL;
    c->curl = curl_easy_init();
    if (!c->endpoint || !c->model || (key && !c->key) || !c->curl) {
        temper_chat_close(c);
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    }
    /* no trailing slash, so that paths join with one */
    for (size_t n = strlen(c->endpoint); n > 0 && c->endpoint[n - 1] == '/'; n--)
        c->endpoint[n - 1] = 0;
    c->cfg.endpoint = c->endpoint;
    c->cfg.model = c->model;
    c->cfg.key_env = NULL;
    if (!c->cfg.max_tokens)
        c->cfg.max_tokens = 8192;
    if (c->cfg.timeout_s <= 0)
        c->cfg.timeout_s = 600;
    if (c->cfg.connect_timeout_s <= 0)
        c->cfg.connect_timeout_s = 10;
    if (c->cfg.retries < 0)
        c->cfg.retries = 4;
    if (c->cfg.backoff_s <= 0)
        c->cfg.backoff_s = 1;
    if (c->cfg.backoff_max_s <= 0)
        c->cfg.backoff_max_s = 120;
    c->use_completion_tokens = c->cfg.token_param == TEMPER_CHAT_TOKENS_COMPLETION;
    temper_rng_seed(&c->rng, c->cfg.seed ? c->cfg.seed : temper_secret_seed());
    *out = c;
    return 0;
}

void temper_chat_close(struct temper_chat *c)
{
    if (!c)
        return;
    if (c->curl)
        curl_easy_cleanup(c->curl);
    if (c->key) {
        /* the key does not linger in freed memory */
        volatile char *p = c->key;
        while (*p)
            *p++ = 0;
        free(c->key);
    }
    free(c->endpoint);
    free(c->model);
    free(c);
}

void temper_chat_reply_free(struct temper_chat_reply *r)
{
    if (!r)
        return;
    free(r->content);
    free(r->reasoning);
    free(r->finish_reason);
    memset(r, 0, sizeof(*r));
}

/* ---- the request ---- */

static char *request_body(struct temper_chat *c, const struct temper_chat_message *m, int n)
{
    json_t *body = json_object();
    json_object_set_new(body, "model", json_string(c->model));
    json_t *msgs = json_array();
    if (c->cfg.api == TEMPER_CHAT_ANTHROPIC) {
        /* the system prompt is a field of its own; every other message alternates */
        struct temper_buf sys;
        temper_buf_init(&sys, 1u << 24);
        for (int i = 0; i < n; i++) {
            if (!strcmp(m[i].role, "system")) {
                if (sys.len)
                    temper_buf_append(&sys, "\n\n", 2);
                temper_buf_append(&sys, m[i].content, strlen(m[i].content));
            } else {
                json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", m[i].role, "content", m[i].content));
            }
        }
        if (sys.len)
            json_object_set_new(body, "system", json_string(sys.data));
        temper_buf_free(&sys);
        json_object_set_new(body, "max_tokens", json_integer(c->cfg.max_tokens));
    } else {
        for (int i = 0; i < n; i++)
            json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", m[i].role, "content", m[i].content));
        json_object_set_new(body, c->use_completion_tokens ? "max_completion_tokens" : "max_tokens",
                            json_integer(c->cfg.max_tokens));
    }
    json_object_set_new(body, "messages", msgs);
    if (c->cfg.temperature >= 0 && !c->no_temperature)
        json_object_set_new(body, "temperature", json_real(c->cfg.temperature));
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    return text;
}

/* ---- the reply ---- */

static char *dup_or_empty(const char *s)
{
    return strdup(s ? s : "");
}

/* Appends text to a reasoning buffer, a blank line between pieces. */
static void add_reasoning(struct temper_buf *b, const char *text)
{
    if (!text || !*text)
        return;
    if (b->len)
        temper_buf_append(b, "\n\n", 2);
    temper_buf_append(b, text, strlen(text));
}

int temper_chat_parse(enum temper_chat_api api, const char *body, struct temper_chat_reply *r, char *msg,
                      size_t msg_size)
{
    memset(r, 0, sizeof(*r));
    r->prompt_tokens = r->completion_tokens = -1;
    json_error_t jerr;
    json_t *root = json_loads(body ? body : "", 0, &jerr);
    char shown[200];
    if (!root || !json_is_object(root)) {
        temper_show_bytes(body ? body : "", body ? strlen(body) : 0, 160, shown, sizeof(shown));
        json_decref(root);
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "the answer is not a JSON object: %s", shown);
    }
    struct temper_buf reasoning, content;
    temper_buf_init(&reasoning, CHAT_BODY_MAX);
    temper_buf_init(&content, CHAT_BODY_MAX);
    const char *finish = NULL;
    int err = 0;
    if (api == TEMPER_CHAT_ANTHROPIC) {
        json_t *blocks = json_object_get(root, "content");
        if (!json_is_array(blocks)) {
            err = temper_fail(msg, msg_size, TEMPER_EPARSE, "the answer has no \"content\" array (not a Messages API reply)");
        } else {
            size_t i;
            json_t *b;
            json_array_foreach(blocks, i, b)
            {
                const char *type = json_string_value(json_object_get(b, "type"));
                if (type && !strcmp(type, "text")) {
                    const char *t = json_string_value(json_object_get(b, "text"));
                    if (t)
                        temper_buf_append(&content, t, strlen(t));
                } else if (type && !strcmp(type, "thinking")) {
                    add_reasoning(&reasoning, json_string_value(json_object_get(b, "thinking")));
                }
                /* redacted_thinking carries nothing readable */
            }
        }
        finish = json_string_value(json_object_get(root, "stop_reason"));
        json_t *u = json_object_get(root, "usage");
        if (json_is_integer(json_object_get(u, "input_tokens")))
            r->prompt_tokens = json_integer_value(json_object_get(u, "input_tokens"));
        if (json_is_integer(json_object_get(u, "output_tokens")))
            r->completion_tokens = json_integer_value(json_object_get(u, "output_tokens"));
        r->truncated = finish && !strcmp(finish, "max_tokens");
    } else {
        json_t *choice = json_array_get(json_object_get(root, "choices"), 0);
        json_t *m = json_object_get(choice, "message");
        if (!json_is_object(m)) {
            err = temper_fail(msg, msg_size, TEMPER_EPARSE,
                              "the answer has no choices[0].message (not a chat completions reply)");
        } else {
            add_reasoning(&reasoning, json_string_value(json_object_get(m, "reasoning_content")));
            add_reasoning(&reasoning, json_string_value(json_object_get(m, "reasoning")));
            const char *t = json_string_value(json_object_get(m, "content"));
            if (t)
                temper_buf_append(&content, t, strlen(t));
        }
        finish = json_string_value(json_object_get(choice, "finish_reason"));
        json_t *u = json_object_get(root, "usage");
        if (json_is_integer(json_object_get(u, "prompt_tokens")))
            r->prompt_tokens = json_integer_value(json_object_get(u, "prompt_tokens"));
        if (json_is_integer(json_object_get(u, "completion_tokens")))
            r->completion_tokens = json_integer_value(json_object_get(u, "completion_tokens"));
        r->truncated = finish && !strcmp(finish, "length");
    }
    if (!err) {
        char *answer = NULL, *think = NULL;
        if (temper_agent_split_think(content.data ? content.data : "", &answer, &think)) {
            err = temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
        } else {
            add_reasoning(&reasoning, think);
            r->content = answer;
            r->reasoning = dup_or_empty(reasoning.data);
            r->finish_reason = dup_or_empty(finish);
            answer = NULL;
        }
        free(answer);
        free(think);
    }
    temper_buf_free(&reasoning);
    temper_buf_free(&content);
    json_decref(root);
    if (err)
        temper_chat_reply_free(r);
    return err;
}

/* ---- one HTTP attempt ---- */

/* What an attempt brought back. */
struct attempt {
    struct temper_buf body; /* the answer's body */
    long status;            /* HTTP status, 0 if none */
    double retry_after_s;   /* Retry-After, seconds; negative when absent */
    CURLcode code;          /* curl's result */
    char curl_error[CURL_ERROR_SIZE]; /* curl's words */
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *user)
{
    struct attempt *a = user;
    size_t n = size * nmemb;
    return temper_buf_append(&a->body, data, n) ? 0 : n;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *user)
{
    struct attempt *a = user;
    size_t n = size * nmemb;
    if (n > 12 && !strncasecmp(data, "retry-after:", 12)) {
        char v[128];
        size_t len = n - 12 < sizeof(v) - 1 ? n - 12 : sizeof(v) - 1;
        memcpy(v, data + 12, len);
        v[len] = 0;
        char *p = v;
        while (*p == ' ' || *p == '\t')
            p++;
        char *end;
        double s = strtod(p, &end);
        if (end != p && s >= 0) {
            a->retry_after_s = s;
        } else {
            /* an HTTP date */
            for (char *q = p + strlen(p); q > p && (q[-1] == '\r' || q[-1] == '\n'); q--)
                q[-1] = 0;
            time_t when = curl_getdate(p, NULL);
            if (when > 0)
                a->retry_after_s = difftime(when, time(NULL)) > 0 ? difftime(when, time(NULL)) : 0;
        }
    }
    return n;
}

static const char *chat_path(const struct temper_chat *c)
{
    const char *path = c->cfg.api == TEMPER_CHAT_ANTHROPIC ? "/v1/messages" : "/chat/completions";
    size_t n = strlen(c->endpoint), p = strlen(path);
    /* an endpoint given as the full URL is taken as it is */
    return n >= p && !strcmp(c->endpoint + n - p, path) ? "" : path;
}

static void run_attempt(struct temper_chat *c, const char *url, const char *body, struct attempt *a)
{
    CURL *h = c->curl;
    curl_easy_reset(h);
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/json");
    char line[4200];
    if (c->cfg.api == TEMPER_CHAT_ANTHROPIC) {
        headers = curl_slist_append(headers, "anthropic-version: 2023-06-01");
        if (c->key) {
            snprintf(line, sizeof(line), "x-api-key: %s", c->key);
            headers = curl_slist_append(headers, line);
        }
    } else if (c->key) {
        snprintf(line, sizeof(line), "Authorization: Bearer %s", c->key);
        headers = curl_slist_append(headers, line);
    }
    memset(line, 0, sizeof(line));
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, a);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(c->cfg.timeout_s * 1000));
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(c->cfg.connect_timeout_s * 1000));
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, a->curl_error);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "temper-agent");
    a->code = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &a->status);
    curl_slist_free_all(headers);
}

/* 1 if an error answer says the account is out of quota or credit: retrying cannot help. */
static int quota_error(const char *body)
{
    return body && (strstr(body, "insufficient_quota") || strstr(body, "billing") ||
                    strstr(body, "credit balance") || strstr(body, "exceeded your current quota"));
}

/* The error's words from an error answer ({"error": {"message": ...}} in both APIs). */
static void error_words(const char *body, char *out, size_t size)
{
    json_t *root = json_loads(body ? body : "", 0, NULL);
    json_t *e = json_object_get(root, "error");
    const char *m = json_string_value(json_object_get(e, "message"));
    if (!m)
        m = json_string_value(e);
    if (m)
        temper_show_bytes(m, strlen(m), 300, out, size);
    else
        temper_show_bytes(body ? body : "", body ? strlen(body) : 0, 300, out, size);
    json_decref(root);
}

static void sleep_s(double s)
{
    if (s <= 0)
        return;
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    while (nanosleep(&ts, &ts))
        ;
}

int temper_chat_complete(struct temper_chat *c, const struct temper_chat_message *messages, int n,
                         temper_chat_exchange_cb cb, void *user, struct temper_chat_reply *reply, char *msg,
                         size_t msg_size)
{
    memset(reply, 0, sizeof(*reply));
    char url[4200];
    snprintf(url, sizeof(url), "%s%s", c->endpoint, chat_path(c));
    double start = temper_now_s();
    int switched = 0, dropped = 0, err = TEMPER_EIO;
    char why[1200] = "";
    for (int attempt = 1, retry = 0;; attempt++) {
        char *body = request_body(c, messages, n);
        if (!body)
            return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
        struct attempt a;
        memset(&a, 0, sizeof(a));
        temper_buf_init(&a.body, CHAT_BODY_MAX);
        a.retry_after_s = -1;
        double t0 = temper_now_s();
        run_attempt(c, url, body, &a);
        double ms = (temper_now_s() - t0) * 1e3;
        const char *text = a.body.data;
        int retryable = 0;
        struct temper_chat_exchange ex = {attempt, url, body, a.code == CURLE_OK ? a.status : 0, text, ms, NULL, NULL};
        if (a.code != CURLE_OK) {
            snprintf(why, sizeof(why), "%.200s: %s", url, a.curl_error[0] ? a.curl_error : curl_easy_strerror(a.code));
            retryable = a.code != CURLE_WRITE_ERROR; /* an answer past the limit stays past it */
            if (a.code == CURLE_WRITE_ERROR)
                snprintf(why, sizeof(why), "%.200s: the answer passed %u bytes", url, CHAT_BODY_MAX);
            err = TEMPER_EIO;
        } else if (a.status == 200) {
            char pmsg[400];
            err = temper_chat_parse(c->cfg.api, text, reply, pmsg, sizeof(pmsg));
            if (err)
                snprintf(why, sizeof(why), "%.200s: %s", url, pmsg);
            /* a 200 that is not the API's answer (a proxy's page, a truncated body) is a server's
             * fault, as a 5xx is */
            retryable = err == TEMPER_EPARSE;
        } else {
            char words[400];
            error_words(text, words, sizeof(words));
            snprintf(why, sizeof(why), "%.200s answered %ld: %s", url, a.status, words);
            err = TEMPER_EINVALID;
            if (quota_error(text)) {
                snprintf(why, sizeof(why), "%.200s answered %ld, a quota or billing error (not retried): %s", url,
                         a.status, words);
            } else if (a.status == 429 || a.status >= 500) {
                retryable = 1;
                err = TEMPER_EIO;
            } else if (a.status == 400 && text &&
                       ((!switched && c->cfg.api == TEMPER_CHAT_OPENAI &&
                         c->cfg.token_param == TEMPER_CHAT_TOKENS_AUTO && !c->use_completion_tokens &&
                         strstr(text, "max_completion_tokens")) ||
                        (!dropped && !c->no_temperature && c->cfg.temperature >= 0 && strstr(text, "temperature") &&
                         (strstr(text, "nsupported") || strstr(text, "not supported"))))) {
                /* the endpoint wants the newer token field, or takes no temperature: change the
                 * request for good and ask again at once */
                if (strstr(text, "max_completion_tokens") && !switched && c->cfg.api == TEMPER_CHAT_OPENAI &&
                    c->cfg.token_param == TEMPER_CHAT_TOKENS_AUTO && !c->use_completion_tokens) {
                    c->use_completion_tokens = 1;
                    switched = 1;
                } else {
                    c->no_temperature = 1;
                    dropped = 1;
                }
                ex.error = why;
                if (cb)
                    cb(user, &ex);
                temper_buf_free(&a.body);
                free(body);
                continue;
            }
        }
        ex.error = err ? why : NULL;
        ex.parsed = err ? NULL : reply;
        if (!err) {
            reply->attempts = attempt;
            reply->latency_ms = (temper_now_s() - start) * 1e3;
        }
        if (cb)
            cb(user, &ex);
        temper_buf_free(&a.body);
        free(body);
        if (!err)
            return 0;
        if (!retryable || retry >= c->cfg.retries)
            break;
        /* full jitter: a uniform wait up to the exponential bound; Retry-After, when given, is the
         * least wait */
        double bound = c->cfg.backoff_s * ldexp(1.0, retry);
        if (bound > c->cfg.backoff_max_s)
            bound = c->cfg.backoff_max_s;
        double wait = temper_rng_uniform(&c->rng) * bound;
        if (a.retry_after_s > wait)
            wait = a.retry_after_s < c->cfg.backoff_max_s ? a.retry_after_s : c->cfg.backoff_max_s;
        retry++;
        sleep_s(wait);
    }
    return temper_fail(msg, msg_size, err, "%s", why);
}
