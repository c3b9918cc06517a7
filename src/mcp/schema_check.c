/* schema_check.c: checks a tool call's arguments against the tool's own input schema (the one
 * tools/list shows), so that what the client is told and what the server accepts cannot differ.
 * Only the JSON Schema keywords the tools' schemas use are known; every mismatch names the path
 * of the bad value. */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "mcp.h"

/* 1 if value has the JSON Schema type named type. */
static int type_is(json_t *value, const char *type)
{
    if (!strcmp(type, "object"))
        return json_is_object(value);
    if (!strcmp(type, "array"))
        return json_is_array(value);
    if (!strcmp(type, "string"))
        return json_is_string(value);
    if (!strcmp(type, "boolean"))
        return json_is_boolean(value);
    if (!strcmp(type, "null"))
        return json_is_null(value);
    if (!strcmp(type, "number"))
        return json_is_number(value);
    if (!strcmp(type, "integer")) /* 3.0 is an integer to JSON Schema */
        return json_is_integer(value) ||
               (json_is_real(value) && isfinite(json_real_value(value)) &&
                json_real_value(value) == floor(json_real_value(value)));
    return 0;
}

static const char *type_of(json_t *value)
{
    switch (json_typeof(value)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    default:
        return "null";
    }
}

static int fail(char *msg, size_t msg_size, const char *fmt, const char *a, const char *b)
{
    snprintf(msg, msg_size, fmt, a, b);
    return -1;
}

/* The value's type, and its value among the schema's enum. */
static int check_type(json_t *schema, json_t *value, char *msg, size_t msg_size)
{
    json_t *type = json_object_get(schema, "type");
    if (json_is_string(type) && !type_is(value, json_string_value(type))) {
        char want[64];
        snprintf(want, sizeof(want), "%s", json_string_value(type));
        return fail(msg, msg_size, "must be of type %s, not %s", want, type_of(value));
    }
    if (json_is_array(type)) {
        size_t i;
        json_t *t;
        int ok = 0;
        json_array_foreach(type, i, t) ok |= json_is_string(t) && type_is(value, json_string_value(t));
        if (!ok) {
            char *want = json_dumps(type, JSON_COMPACT);
            fail(msg, msg_size, "must be one of the types %s, not %s", want ? want : "?", type_of(value));
            free(want);
            return -1;
        }
    }
    json_t *choices = json_object_get(schema, "enum");
    if (json_is_array(choices)) {
        size_t i;
        json_t *c;
        int ok = 0;
        json_array_foreach(choices, i, c) ok |= json_equal(c, value);
        if (!ok) {
            char *want = json_dumps(choices, JSON_COMPACT);
            fail(msg, msg_size, "must be one of %s%s", want ? want : "?", "");
            free(want);
            return -1;
        }
    }
    return 0;
}

/* A number's minimum and maximum, a string's length in bytes. */
static int check_bounds(json_t *schema, json_t *value, char *msg, size_t msg_size)
{
    if (json_is_number(value)) {
        double v = json_number_value(value);
        json_t *lo = json_object_get(schema, "minimum"), *hi = json_object_get(schema, "maximum");
        char bound[64];
        if (json_is_number(lo) && v < json_number_value(lo)) {
            snprintf(bound, sizeof(bound), "%g", json_number_value(lo));
            return fail(msg, msg_size, "must be at least %s%s", bound, "");
        }
        if (json_is_number(hi) && v > json_number_value(hi)) {
            snprintf(bound, sizeof(bound), "%g", json_number_value(hi));
            return fail(msg, msg_size, "must be at most %s%s", bound, "");
        }
    }
    if (json_is_string(value)) {
        /* bytes, not characters: the limits are the library's, which counts bytes */
        size_t len = json_string_length(value);
        json_t *lo = json_object_get(schema, "minLength"), *hi = json_object_get(schema, "maxLength");
        char n[64], limit[64];
        snprintf(n, sizeof(n), "%zu", len);
        if (json_is_integer(lo) && len < (size_t)json_integer_value(lo)) {
            snprintf(limit, sizeof(limit), "%lld", (long long)json_integer_value(lo));
            return fail(msg, msg_size, "is %s bytes long; the least is %s", n, limit);
        }
        if (json_is_integer(hi) && len > (size_t)json_integer_value(hi)) {
            snprintf(limit, sizeof(limit), "%lld", (long long)json_integer_value(hi));
            return fail(msg, msg_size, "is %s bytes long; the limit is %s bytes", n, limit);
        }
    }
    return 0;
}

/* An object's required and extra members, and each member and array item against its schema. */
static int check_members(json_t *schema, json_t *value, const char *root, char *path, size_t path_size, char *msg,
                         size_t msg_size)
{
    if (json_is_object(value)) {
        json_t *props = json_object_get(schema, "properties");
        json_t *required = json_object_get(schema, "required");
        json_t *extra = json_object_get(schema, "additionalProperties");
        size_t i;
        json_t *r;
        json_array_foreach(required, i, r) {
            if (json_is_string(r) && !json_object_get(value, json_string_value(r))) {
                snprintf(path, path_size, "%s.%s", root, json_string_value(r));
                return fail(msg, msg_size, "is required%s%s", "", "");
            }
        }
        const char *key;
        json_t *v;
        json_object_foreach(value, key, v) {
            char sub[512];
            snprintf(sub, sizeof(sub), "%s.%s", root, key);
            json_t *s = json_object_get(props, key);
            if (!s && json_is_false(extra)) {
                snprintf(path, path_size, "%s", sub);
                return fail(msg, msg_size, "is not an argument of this tool%s%s", "", "");
            }
            if (!s && json_is_object(extra))
                s = extra;
            if (s && mcp_schema_check(s, v, sub, path, path_size, msg, msg_size))
                return -1;
        }
    }
    if (json_is_array(value)) {
        json_t *items = json_object_get(schema, "items");
        size_t i;
        json_t *v;
        json_array_foreach(value, i, v) {
            char sub[512];
            snprintf(sub, sizeof(sub), "%s[%zu]", root, i);
            if (json_is_object(items) && mcp_schema_check(items, v, sub, path, path_size, msg, msg_size))
                return -1;
        }
    }
    return 0;
}

int mcp_schema_check(json_t *schema, json_t *value, const char *root, char *path, size_t path_size, char *msg,
                     size_t msg_size)
{
    snprintf(path, path_size, "%s", root);
    if (check_type(schema, value, msg, msg_size) || check_bounds(schema, value, msg, msg_size) ||
        check_members(schema, value, root, path, path_size, msg, msg_size))
        return -1;
    snprintf(path, path_size, "%s", root);
    return 0;
}
