/* test_agent.c: unit tests of agent.h and knowledge.h: reading replies of both APIs (reasoning
 * apart from the answer, cut-off replies, answers that are not the API's), <think> blocks, the
 * fenced kernel in a reply, a kernel's features, the chat client's checks of its configuration,
 * and the knowledge base's full-text search over a folder of guides. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/agent.h"
#include "temper/error.h"
#include "agent/knowledge.h"
#include "util/util.h"

#include "unit.h"

static void test_parse(void **state)
{
    (void)state;
    /* Table: an API's answer -> the content, the reasoning, truncated, tokens, or an error. */
    static const struct {
        enum temper_chat_api api;
        const char *body;      /* the answer */
        int err;               /* expected result */
        const char *content;   /* the answer without reasoning */
        const char *reasoning; /* the reasoning, "" if none */
        int truncated;         /* cut off */
        int64_t in, out;       /* token counts, -1 unknown */
    } cases[] = {
        {TEMPER_CHAT_OPENAI,
         "{\"choices\":[{\"message\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}],"
         "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}",
         0, "hi", "", 0, 5, 2},
        {TEMPER_CHAT_OPENAI,
         "{\"choices\":[{\"message\":{\"content\":\"code\",\"reasoning_content\":\"why\"},\"finish_reason\":\"length\"}]}",
         0, "code", "why", 1, -1, -1},
        {TEMPER_CHAT_OPENAI, /* OpenRouter / vLLM's "reasoning" field, and a <think> block in the content */
         "{\"choices\":[{\"message\":{\"content\":\"<think>hmm</think>\\nanswer\",\"reasoning\":\"r1\"}}]}", 0,
         "answer", "r1\n\nhmm", 0, -1, -1},
        {TEMPER_CHAT_OPENAI, "{\"choices\":[{\"message\":{\"content\":null}}]}", 0, "", "", 0, -1, -1},
        {TEMPER_CHAT_ANTHROPIC,
         "{\"content\":[{\"type\":\"thinking\",\"thinking\":\"plan\"},{\"type\":\"text\",\"text\":\"a\"},"
         "{\"type\":\"text\",\"text\":\"b\"}],\"stop_reason\":\"end_turn\",\"usage\":{\"input_tokens\":9,"
         "\"output_tokens\":3}}",
         0, "ab", "plan", 0, 9, 3},
        {TEMPER_CHAT_ANTHROPIC, "{\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"stop_reason\":\"max_tokens\"}", 0,
         "x", "", 1, -1, -1},
        {TEMPER_CHAT_OPENAI, "not json", TEMPER_EPARSE, NULL, NULL, 0, 0, 0},
        {TEMPER_CHAT_OPENAI, "{\"content\":[]}", TEMPER_EPARSE, NULL, NULL, 0, 0, 0},
        {TEMPER_CHAT_ANTHROPIC, "{\"choices\":[]}", TEMPER_EPARSE, NULL, NULL, 0, 0, 0},
        {TEMPER_CHAT_OPENAI, "[1]", TEMPER_EPARSE, NULL, NULL, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct temper_chat_reply r;
        char msg[512] = "";
        int err = temper_chat_parse(cases[i].api, cases[i].body, &r, msg, sizeof(msg));
        if (err != cases[i].err)
            fail_msg("case %zu: returned %d, want %d (%s)", i, err, cases[i].err, msg);
        if (err) {
            assert_true(strlen(msg) > 0);
            continue;
        }
        if (strcmp(r.content, cases[i].content) || strcmp(r.reasoning, cases[i].reasoning))
            fail_msg("case %zu: content '%s' reasoning '%s'", i, r.content, r.reasoning);
        assert_int_equal(r.truncated, cases[i].truncated);
        assert_int_equal(r.prompt_tokens, cases[i].in);
        assert_int_equal(r.completion_tokens, cases[i].out);
        temper_chat_reply_free(&r);
    }
}

static void test_split_think(void **state)
{
    (void)state;
    static const struct {
        const char *text, *answer, *reasoning;
    } cases[] = {
        {"plain", "plain", ""},
        {"<think>a</think>b", "b", "a"},
        {"x<think>a</think>y<think>c</think>z", "xyz", "a\n\nc"},
        {"<think>never closed", "", "never closed"},
        {"\n<think>t</think>\n\nkernel", "kernel", "t"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *a, *r;
        assert_int_equal(temper_agent_split_think(cases[i].text, &a, &r), 0);
        if (strcmp(a, cases[i].answer) || strcmp(r, cases[i].reasoning))
            fail_msg("case %zu: answer '%s' reasoning '%s'", i, a, r);
        free(a);
        free(r);
    }
}

static void test_extract(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        enum temper_agent_code code;
        const char *want; /* the code found */
    } cases[] = {
        {"no code here", TEMPER_AGENT_CODE_NONE, NULL},
        {"```c\nint x;\n```\n", TEMPER_AGENT_CODE_FOUND, "int x;\n"},
        {"text\n```cuda\n// @temper task t\nk\n```\nmore", TEMPER_AGENT_CODE_FOUND, "// @temper task t\nk\n"},
        /* the block with a directive wins over a longer one without */
        {"```\nlonger block of notes here\nand more\n```\n```c\n// @temper task t\n```\n", TEMPER_AGENT_CODE_FOUND,
         "// @temper task t\n"},
        /* else the longest */
        {"```\na\n```\n```\nbbbb\n```\n", TEMPER_AGENT_CODE_FOUND, "bbbb\n"},
        {"```c\n// @temper task t\n__kernel void f(", TEMPER_AGENT_CODE_CUTOFF, NULL},
        {"```c\nfirst\n```\n```c\nunclosed", TEMPER_AGENT_CODE_FOUND, "first\n"},
        {"   ```\nindented fence\n   ```", TEMPER_AGENT_CODE_FOUND, "indented fence\n"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *code = NULL;
        enum temper_agent_code c = temper_agent_extract_code(cases[i].text, &code);
        if (c != cases[i].code)
            fail_msg("case %zu: code %d, want %d", i, c, cases[i].code);
        if (cases[i].want ? !code || strcmp(code, cases[i].want) : code != NULL)
            fail_msg("case %zu: got '%s'", i, code ? code : "(null)");
        free(code);
    }
}

static void test_features(void **state)
{
    (void)state;
    static const struct {
        const char *source;
        const char *want; /* temper_kernel_features_format's text */
    } cases[] = {
        {"__kernel void f(__global float *y) { y[0] = 1; }", "untiled vec1 launches=0 knobs=0"},
        {"// no local memory here\n__kernel void f() {}", "untiled vec1 launches=0 knobs=0"},
        {"__kernel void f() { local float b[64]; }", "untiled vec1 shared launches=0 knobs=0"},
        {"// @temper param BLOCK 64 128\n// @temper launch f grid(1) block(1) args(y)\n"
         "__kernel void f() { __local float t[16][17]; float4 v = vload4(0, p); }",
         "tiled vec4 shared launches=1 knobs=1"},
        {"__global__ void k() { __shared__ float s[TILE]; float2 a; v = __shfl_down_sync(m, v, 1); }",
         "tiled vec2 shared shuffle launches=0 knobs=0"},
        {"#include <mma.h>\n__global__ void k() { wmma::fragment<a> f; half8 h; }",
         "untiled vec8 tensor-cores launches=0 knobs=0"},
        {"// @temper launch a grid(1) block(1) args(y)\n// @temper launch b grid(1) block(1) args(y)\n"
         "int4x; float3 z; myfloat4 q;",
         "untiled vec1 launches=2 knobs=0"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct temper_kernel_features f;
        char text[128];
        temper_kernel_features_detect(cases[i].source, &f);
        temper_kernel_features_format(&f, text, sizeof(text));
        if (strcmp(text, cases[i].want))
            fail_msg("case %zu: '%s', want '%s'", i, text, cases[i].want);
    }
}

static void test_chat_open(void **state)
{
    (void)state;
    unsetenv("TEMPER_UNIT_NO_SUCH_KEY");
    setenv("TEMPER_UNIT_KEY", "sk-unit", 1);
    static const struct {
        const char *endpoint, *model, *key_env;
        int err;
        const char *reason;
    } cases[] = {
        {NULL, "m", NULL, TEMPER_EINVALID, "no endpoint"},
        {"ftp://x", "m", NULL, TEMPER_EINVALID, "not an http:// or https:// URL"},
        {"http://127.0.0.1:1/v1", NULL, NULL, TEMPER_EINVALID, "no model"},
        {"http://127.0.0.1:1/v1", "m", "TEMPER_UNIT_NO_SUCH_KEY", TEMPER_EINVALID, "TEMPER_UNIT_NO_SUCH_KEY is not set"},
        {"http://127.0.0.1:1/v1/", "m", "TEMPER_UNIT_KEY", 0, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct temper_chat_config cfg = {0};
        cfg.endpoint = cases[i].endpoint;
        cfg.model = cases[i].model;
        cfg.key_env = cases[i].key_env;
        struct temper_chat *c = NULL;
        char msg[512] = "";
        int err = temper_chat_open(&cfg, &c, msg, sizeof(msg));
        if (err != cases[i].err)
            fail_msg("case %zu: returned %d, want %d (%s)", i, err, cases[i].err, msg);
        if (err)
            assert_contains(msg, cases[i].reason);
        assert_null(strstr(msg, "sk-unit"));
        temper_chat_close(c);
    }
    assert_int_equal(temper_chat_api_parse("anthropic"), TEMPER_CHAT_ANTHROPIC);
    assert_int_equal(temper_chat_api_parse("openai"), TEMPER_CHAT_OPENAI);
    assert_int_equal(temper_chat_api_parse("gemini"), -1);
}

/* A connection refused is retried (then given up on) and every attempt is seen by the callback;
 * port 1 on loopback has no server. */
static int attempts_seen;
static void count_attempt(void *user, const struct temper_chat_exchange *ex)
{
    (void)user;
    attempts_seen++;
    assert_non_null(ex->error);
    assert_int_equal(ex->status, 0);
    assert_null(strstr(ex->request, "sk-unit"));
}

static void test_chat_unreachable(void **state)
{
    (void)state;
    setenv("TEMPER_UNIT_KEY", "sk-unit", 1);
    struct temper_chat_config cfg = {0};
    cfg.endpoint = "http://127.0.0.1:1/v1";
    cfg.model = "m";
    cfg.key_env = "TEMPER_UNIT_KEY";
    cfg.retries = 2;
    cfg.backoff_s = 0.001;
    cfg.seed = 3;
    struct temper_chat *c;
    char msg[512];
    assert_int_equal(temper_chat_open(&cfg, &c, msg, sizeof(msg)), 0);
    struct temper_chat_message m = {"user", "hello"};
    struct temper_chat_reply r;
    attempts_seen = 0;
    int err = temper_chat_complete(c, &m, 1, count_attempt, NULL, &r, msg, sizeof(msg));
    assert_int_equal(err, TEMPER_EIO);
    assert_int_equal(attempts_seen, 3);
    assert_contains(msg, "127.0.0.1:1/v1/chat/completions");
    assert_null(strstr(msg, "sk-unit"));
    temper_chat_close(c);
}

static void write_guide(const char *dir, const char *name, const char *text)
{
    char path[4400], msg[256];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    assert_int_equal(temper_write_file_atomic(path, text, strlen(text), msg, sizeof(msg)), 0);
}

static void test_knowledge(void **state)
{
    char dir[4200];
    snprintf(dir, sizeof(dir), "%s/guides", (char *)*state);
    write_guide(dir, "coalescing.md", "# Coalescing global memory\nAdjacent threads read adjacent addresses.\n");
    write_guide(dir, "reductions.md", "# Reductions\nA tree in shared memory, then warp shuffles; coalescing matters.\n");
    write_guide(dir, "notes.txt", "# Not a guide\ncoalescing\n");
    struct temper_knowledge_config kc = {dir, "", NULL, NULL, NULL};
    json_t *hits;
    char msg[512];
    assert_int_equal(temper_knowledge_search(&kc, "coalescing", 5, &hits, msg, sizeof(msg)), 0);
    /* both guides match; the one with the word in its title ranks first; notes.txt is no guide */
    assert_int_equal(json_array_size(hits), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(hits, 0), "ref")), "knowledge/coalescing.md");
    assert_string_equal(json_string_value(json_object_get(json_array_get(hits, 0), "title")), "Coalescing global memory");
    json_decref(hits);
    /* stemming: "reduction" finds "Reductions"; any word may match */
    assert_int_equal(temper_knowledge_search(&kc, "reduction tensor-cores", 5, &hits, msg, sizeof(msg)), 0);
    assert_int_equal(json_array_size(hits), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(hits, 0), "kind")), "guide");
    json_decref(hits);
    assert_int_equal(temper_knowledge_search(&kc, "zebra", 5, &hits, msg, sizeof(msg)), 0);
    assert_int_equal(json_array_size(hits), 0);
    json_decref(hits);
    /* a query with no words; FTS5 syntax in a query is taken as words, never as syntax */
    assert_int_equal(temper_knowledge_search(&kc, " ;-) ", 5, &hits, msg, sizeof(msg)), TEMPER_EINVALID);
    assert_contains(msg, "no words");
    assert_int_equal(temper_knowledge_search(&kc, "NEAR(\"x\" OR coalescing*", 5, &hits, msg, sizeof(msg)), 0);
    assert_int_equal(json_array_size(hits), 2);
    json_decref(hits);
    /* the prompt's section is bounded */
    char *text;
    assert_int_equal(temper_knowledge_prompt(&kc, "coalescing", 5, 60, &text, msg, sizeof(msg)), 0);
    assert_contains(text, "### guide: Coalescing global memory (knowledge/coalescing.md)");
    assert_contains(text, "[... cut]");
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_split_think),
        cmocka_unit_test(test_extract),
        cmocka_unit_test(test_features),
        cmocka_unit_test(test_chat_open),
        cmocka_unit_test(test_chat_unreachable),
        cmocka_unit_test_setup_teardown(test_knowledge, make_tmp, remove_tmp),
    };
    return cmocka_run_group_tests_name("agent", tests, NULL, NULL);
}
