/* deep.c: optional deep checks for a candidate that passed: compute-sanitizer (memcheck,
 * racecheck, initcheck, synccheck) on its check shapes, its findings read (errors, warnings,
 * racecheck's hazards by kind), and Nsight Compute on its launches at the first
 * bench shape. Both run this temper binary again under the tool, as a child process with a
 * time limit, and read what the tool printed. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_internal.h"
#include "eval/result_set.h"
#include "temper/result.h"
#include "util/util.h"

#define TOOL_OUTPUT_MAX (4u << 20)
#define MAX_TOOL_ARGS 96

/* Room for the "NAME=VALUE" text of each knob value a tool's command line passes with --set: a name
 * and a value of up to TEMPER_NAME_MAX - 1 bytes each (a longer value never passed the eval that
 * asked for deep checks). */
#define DEEP_SET_MAX (2 * TEMPER_NAME_MAX + 2)
#define DEEP_MAX_SETS (MAX_TOOL_ARGS / 2)

/* Builds "temper eval PATH --no-store --json ..." after the tool's own arguments; the request's
 * knob values go as --set texts, written into sets. */
static int eval_args(const struct temper_deep_request *r, char **argv, int argc, const char *mode,
                     char (*sets)[DEEP_SET_MAX])
{
    argv[argc++] = (char *)r->self_exe;
    argv[argc++] = "eval";
    argv[argc++] = (char *)r->path;
    argv[argc++] = "--no-store";
    argv[argc++] = "--json";
    argv[argc++] = "--no-timing";
    argv[argc++] = (char *)mode;
    if (r->device) {
        argv[argc++] = "--device";
        argv[argc++] = (char *)r->device;
    }
    if (r->tasks_dir) {
        argv[argc++] = "--tasks";
        argv[argc++] = (char *)r->tasks_dir;
    }
    if (r->lang) {
        argv[argc++] = "--lang";
        argv[argc++] = (char *)r->lang;
    }
    for (int i = 0; i < r->nknobs && i < DEEP_MAX_SETS && argc < MAX_TOOL_ARGS - 3; i++) {
        temper_knob_value_assignment(&r->knobs[i], sets[i], DEEP_SET_MAX);
        argv[argc++] = "--set";
        argv[argc++] = sets[i];
    }
    argv[argc] = NULL;
    return argc;
}

/* The racecheck hazard kinds, by the two accesses of a reported pair: "Race reported between
 * Write access ... and Write access" (or hazard mode's "Potential WAW hazard") is write_write;
 * one read and one write (either order; RAW and WAR) is read_write. */
static const char *const hazard_kinds[] = {"write_write", "read_write", NULL};

/* The number after text (skipping spaces), or -1 when none. */
static long number_after(const char *text, const char *end)
{
    while (text < end && *text == ' ')
        text++;
    if (text >= end || *text < '0' || *text > '9')
        return -1;
    return strtol(text, NULL, 10);
}

/* The severity a finding line begins with (after the ========= and spaces): 1 for an error
 * ("Error:", "ERROR:"), 2 for a warning ("Warning:", "WARNING:", "WARN:"), 0 otherwise. */
static int line_severity(const char *text, size_t len)
{
    static const struct {
        const char *word;
        int severity;
    } words[] = {{"Error:", 1}, {"ERROR:", 1}, {"Warning:", 2}, {"WARNING:", 2}, {"WARN:", 2}};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (len >= strlen(words[i].word) && !strncmp(text, words[i].word, strlen(words[i].word)))
            return words[i].severity;
    return 0;
}

/* Which access a "<Kind> access" names: 'W' for Write, 'R' for Read (also Atomic reads), 0 none. */
static char access_kind(const char *text, const char *end)
{
    const char *w = memmem(text, (size_t)(end - text), "Write access", 12);
    const char *r = memmem(text, (size_t)(end - text), "Read access", 11);
    if (w && (!r || w < r))
        return 'W';
    return r ? 'R' : 0;
}

/* Reads compute-sanitizer's output (every process it reported on): errors and warnings from the
 * summaries ("ERROR SUMMARY: N errors", racecheck's "RACECHECK SUMMARY: H hazards displayed (N
 * errors, W warnings)"; memcheck's second "ERROR SUMMARY: N errors were not printed" line is not
 * counted again), racecheck's reported pairs by kind, and the first lines of findings. Without a
 * summary the errors and warnings are counted from the finding lines, and the run is marked
 * incomplete. */
json_t *temper_sanitizer_findings(const char *output, int exit_code, int timed_out)
{
    long errors = 0, warnings = 0, line_errors = 0, line_warnings = 0;
    long pairs[2] = {0, 0}, instances[2] = {0, 0}, race_total = 0;
    int summaries = 0, racecheck = 0;
    char first = 0; /* the first access of the race being read, 0 outside one */
    json_t *report = json_array();
    for (const char *p = output; p && *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eol = p + len;
        const char *sum = memmem(p, len, "ERROR SUMMARY:", 14);
        const char *race = memmem(p, len, "RACECHECK SUMMARY:", 18);
        if (sum && !memmem(p, len, "not printed", 11)) {
            long n = number_after(sum + 14, eol);
            errors += n > 0 ? n : 0;
            summaries++;
        } else if (race) {
            const char *paren = memchr(race, '(', (size_t)(eol - race));
            const char *comma = paren ? memchr(paren, ',', (size_t)(eol - paren)) : NULL;
            long e = paren ? number_after(paren + 1, eol) : -1, w = comma ? number_after(comma + 1, eol) : -1;
            errors += e > 0 ? e : 0;
            warnings += w > 0 ? w : 0;
            race_total += (e > 0 ? e : 0) + (w > 0 ? w : 0);
            summaries++;
            racecheck = 1;
        }
        const char *text = p;
        if (len >= 9 && !strncmp(p, "=========", 9)) {
            text = p + 9;
            while (text < eol && *text == ' ')
                text++;
        }
        size_t tlen = (size_t)(eol - text);
        int severity = line_severity(text, tlen);
        const char *between = memmem(text, tlen, "Race reported between", 21);
        const char *potential = memmem(text, tlen, "Potential ", 10);
        if (severity && (between || (potential && memmem(text, tlen, "hazard", 6)))) {
            line_errors += severity == 1;
            line_warnings += severity == 2;
            racecheck = 1;
        }
        if (between) {
            first = access_kind(between + 21, eol);
        } else if (potential && potential + 13 <= eol && potential[13] == ' ' &&
                   (!strncmp(potential + 10, "WAW", 3) || !strncmp(potential + 10, "RAW", 3) ||
                    !strncmp(potential + 10, "WAR", 3))) {
            int k = potential[10] == 'W' && potential[12] == 'W' ? 0 : 1;
            pairs[k]++;
            instances[k]++;
            first = 0;
        } else if (first && tlen > 4 && !strncmp(text, "and ", 4)) {
            char second = access_kind(text + 4, eol);
            if (second) {
                int k = first == 'W' && second == 'W' ? 0 : 1;
                pairs[k]++;
                const char *bracket = memrchr(text, '[', tlen);
                long n = bracket ? number_after(bracket + 1, eol) : -1;
                instances[k] += n > 0 ? n : 1;
            }
        } else if (!(tlen > 2 && text[0] == '>' && text[1] == '>') && text != p && tlen) {
            first = first && (!strncmp(text, "at ", 3) || !strncmp(text, "in ", 3)) ? first : 0;
        }
        if (!sum && !race && len > 10 && !strncmp(p, "=========", 9) && json_array_size(report) < 24 && tlen)
            json_array_append_new(report, json_stringn(text, tlen));
        p = end ? end + 1 : p + len;
    }
    if (!summaries) {
        errors = line_errors;
        warnings = line_warnings;
    }
    json_t *r = json_pack("{s:I, s:I, s:o, s:i}", "errors", (json_int_t)errors, "warnings", (json_int_t)warnings,
                          "report", report, "exit_code", exit_code);
    if (racecheck || pairs[0] || pairs[1]) {
        json_t *h = json_object(), *n = json_object();
        for (int k = 0; hazard_kinds[k]; k++) {
            json_object_set_new(h, hazard_kinds[k], json_integer(pairs[k]));
            json_object_set_new(n, hazard_kinds[k], json_integer(instances[k]));
        }
        /* The summary's errors and warnings count every hazard; the reports read above (and its
         * "N hazards displayed") stop at the print limit. */
        long unread = race_total - pairs[0] - pairs[1];
        if (unread > 0)
            json_object_set_new(h, "not_printed", json_integer(unread));
        json_object_set_new(r, "hazards", h);
        json_object_set_new(r, "hazard_instances", n);
    }
    if (!summaries || timed_out)
        json_object_set_new(r, "incomplete", json_string(timed_out ? "the tool ran past its time limit" :
                                                                      "the tool printed no error summary"));
    return r;
}

void temper_sanitize_summary(json_t *sanitize, char *out, size_t out_size)
{
    size_t used = 0;
    out[0] = 0;
    const char *tool;
    json_t *r;
    if (json_is_string(json_object_get(sanitize, "error"))) {
        snprintf(out, out_size, "not run: %s", json_string_value(json_object_get(sanitize, "error")));
        return;
    }
    json_object_foreach(sanitize, tool, r)
    {
        if (used >= out_size)
            break;
        if (!json_is_object(r)) /* "mode" */
            continue;
        long long e = json_integer_value(json_object_get(r, "errors")), w = json_integer_value(json_object_get(r, "warnings"));
        used += (size_t)snprintf(out + used, out_size - used, "%s%s %lld error%s", used ? "; " : "", tool, e,
                                 e == 1 ? "" : "s");
        if (used < out_size && json_object_get(r, "hazards"))
            used += (size_t)snprintf(out + used, out_size - used, ", %lld warning%s", w, w == 1 ? "" : "s");
        json_t *h = json_object_get(r, "hazards");
        int shown = 0;
        for (int k = 0; hazard_kinds[k] && used < out_size; k++) {
            json_int_t n = json_integer_value(json_object_get(h, hazard_kinds[k]));
            if (n)
                used += (size_t)snprintf(out + used, out_size - used, "%s%s %lld", shown++ ? ", " : " (", hazard_kinds[k],
                                         (long long)n);
        }
        json_int_t unread = json_integer_value(json_object_get(h, "not_printed"));
        if (unread && used < out_size)
            used += (size_t)snprintf(out + used, out_size - used, "%s%lld past the print limit, kind unread",
                                     shown++ ? ", " : " (", (long long)unread);
        if (shown && used < out_size)
            used += (size_t)snprintf(out + used, out_size - used, ")");
        if (used < out_size && json_object_get(r, "incomplete"))
            used += (size_t)snprintf(out + used, out_size - used, " [incomplete: %s]",
                                     json_string_value(json_object_get(r, "incomplete")));
    }
}

int temper_deep_sanitize(const struct temper_deep_request *req, json_t **out, char *msg, size_t msg_size)
{
    static const char *const tools[] = {"memcheck", "racecheck", "initcheck", "synccheck"};
    *out = json_object();
    for (size_t t = 0; t < sizeof(tools) / sizeof(tools[0]); t++) {
        char *argv[MAX_TOOL_ARGS], sets[DEEP_MAX_SETS][DEEP_SET_MAX];
        int argc = 0;
        /* The tool's library in the worker may talk to the tool over TCP: keep network sockets. */
        argv[argc++] = "env";
        argv[argc++] = "TEMPER_SANDBOX_NETWORK=1";
        argv[argc++] = "compute-sanitizer";
        argv[argc++] = "--tool";
        argv[argc++] = (char *)tools[t];
        argv[argc++] = "--target-processes";
        argv[argc++] = "all";
        argv[argc++] = "--print-limit";
        argv[argc++] = "20";
        if (!strcmp(tools[t], "racecheck")) { /* warnings too: a warp's lanes racing are warnings */
            argv[argc++] = "--racecheck-detect-level";
            argv[argc++] = "warn";
        }
        eval_args(req, argv, argc, "--checks-only", sets);
        struct temper_proc_result pr;
        int err = temper_proc_run(argv, req->timeout_s, TOOL_OUTPUT_MAX, &pr, msg, msg_size);
        if (err) {
            json_decref(*out);
            *out = NULL;
            return err;
        }
        if (pr.exit_code == 127) {
            free(pr.output);
            json_decref(*out);
            *out = NULL;
            return temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "compute-sanitizer is not on the PATH");
        }
        json_object_set_new(*out, tools[t], temper_sanitizer_findings(pr.output, pr.exit_code, pr.timed_out));
        free(pr.output);
    }
    return 0;
}

/* Splits one CSV line into at most max fields (quoted, as ncu writes them); returns the count. */
static int csv_fields(char *line, char **fields, int max)
{
    int n = 0;
    char *p = line;
    while (*p && n < max) {
        if (*p == '"') {
            char *start = ++p, *w = p;
            while (*p && !(*p == '"' && p[1] != '"')) {
                if (*p == '"')
                    p++;
                *w++ = *p++;
            }
            if (*p == '"')
                p++;
            *w = 0;
            fields[n++] = start;
        } else {
            fields[n++] = p;
            while (*p && *p != ',')
                p++;
            if (*p == ',')
                *p++ = 0;
            continue;
        }
        if (*p == ',')
            p++;
    }
    return n;
}

static int column(char **fields, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(fields[i], name))
            return i;
    return -1;
}

/* Nsight Compute's filter for the candidate's kernels ("regex:^(a|b)$", into filter) and how many
 * launches to profile (into count): one of each launch line. */
static int profile_filter(const struct temper_deep_request *req, char *filter, size_t filter_size, char *count,
                          size_t count_size, char *msg, size_t msg_size)
{
    struct temper_candidate cand;
    char *text = NULL;
    size_t len = 0;
    int err = temper_read_file(req->path, TEMPER_SOURCE_MAX, &text, &len, msg, msg_size);
    if (!err)
        err = temper_candidate_parse_lang(req->path, req->lang, text, len, &cand, msg, msg_size);
    free(text);
    if (err)
        return err;
    snprintf(filter, filter_size, "regex:^(");
    for (int i = 0; i < cand.nlaunches; i++) {
        size_t used = strlen(filter);
        snprintf(filter + used, filter_size - used, "%s%s", i ? "|" : "", cand.launches[i].kernel);
    }
    strncat(filter, ")$", filter_size - strlen(filter) - 1);
    snprintf(count, count_size, "%d", cand.nlaunches);
    temper_candidate_free(&cand);
    return 0;
}

/* A metric's value from ncu's text (its thousands' commas dropped), in the unit its key names:
 * times in ms, sizes in bytes. */
static double metric_value(const char *text, const char *unit)
{
    char value_text[64];
    size_t w = 0;
    for (const char *v = text; *v && w + 1 < sizeof(value_text); v++)
        if (*v != ',')
            value_text[w++] = *v;
    value_text[w] = 0;
    double value = strtod(value_text, NULL);
    if (!strcmp(unit, "nsecond") || !strcmp(unit, "ns"))
        value *= 1e-6;
    else if (!strcmp(unit, "usecond") || !strcmp(unit, "us"))
        value *= 1e-3;
    else if (!strcmp(unit, "msecond"))
        value *= 1.0;
    else if (!strcmp(unit, "Kbyte"))
        value *= 1e3;
    else if (!strcmp(unit, "Mbyte"))
        value *= 1e6;
    else if (!strcmp(unit, "Gbyte"))
        value *= 1e9;
    return value;
}

/* The key a metric of ncu's is reported under (its own name where it has none). */
static const char *metric_key(const char *name)
{
    return !strcmp(name, "gpu__time_duration.sum") ? "duration_ms" :
           !strcmp(name, "dram__throughput.avg.pct_of_peak_sustained_elapsed") ? "dram_throughput_pct" :
           !strcmp(name, "sm__warps_active.avg.pct_of_peak_sustained_active") ? "achieved_occupancy_pct" :
           !strcmp(name, "launch__registers_per_thread") ? "registers_per_thread" :
           !strcmp(name, "dram__bytes_read.sum") ? "dram_bytes_read" :
           !strcmp(name, "dram__bytes_write.sum") ? "dram_bytes_written" :
           !strcmp(name, "smsp__inst_executed_op_local_ld.sum") ? "local_loads" :
           !strcmp(name, "smsp__inst_executed_op_local_st.sum") ? "local_stores" : name;
}

/* The kernels of ncu's CSV output (changed in place): an object per profiled launch, holding
 * each metric under its key. */
static json_t *profile_kernels(char *output)
{
    json_t *kernels = json_array();
    char *fields[64];
    int kcol = -1, ncol = -1, ucol = -1, vcol = -1, idcol = -1;
    json_t *current = NULL;
    char id_buf[32] = "";
    for (char *line = output; line && *line;) {
        char *end = strchr(line, '\n');
        if (end)
            *end = 0;
        if (*line == '"') {
            int n = csv_fields(line, fields, 64);
            if (kcol < 0 && column(fields, n, "Metric Name") >= 0) {
                kcol = column(fields, n, "Kernel Name");
                ncol = column(fields, n, "Metric Name");
                ucol = column(fields, n, "Metric Unit");
                vcol = column(fields, n, "Metric Value");
                idcol = column(fields, n, "ID");
            } else if (kcol >= 0 && n > vcol && n > kcol && n > ncol) {
                if (!current || (idcol >= 0 && strcmp(fields[idcol], id_buf))) {
                    current = json_pack("{s:s}", "kernel", fields[kcol]);
                    json_array_append_new(kernels, current);
                    if (idcol >= 0)
                        snprintf(id_buf, sizeof(id_buf), "%s", fields[idcol]);
                }
                double value = metric_value(fields[vcol], ucol >= 0 ? fields[ucol] : "");
                json_object_set_new(current, metric_key(fields[ncol]), json_real(value));
            }
        }
        line = end ? end + 1 : NULL;
    }
    return kernels;
}

int temper_deep_profile(const struct temper_deep_request *req, json_t **out, char *msg, size_t msg_size)
{
    char filter[1024], count[16];
    int err = profile_filter(req, filter, sizeof(filter), count, sizeof(count), msg, msg_size);
    if (err)
        return err;
    char *argv[MAX_TOOL_ARGS], sets[DEEP_MAX_SETS][DEEP_SET_MAX];
    int argc = 0;
    argv[argc++] = "env"; /* as for compute-sanitizer: the tool may talk to its library over TCP */
    argv[argc++] = "TEMPER_SANDBOX_NETWORK=1";
    argv[argc++] = "ncu";
    argv[argc++] = "--clock-control";
    argv[argc++] = "none";
    argv[argc++] = "--target-processes";
    argv[argc++] = "all";
    argv[argc++] = "--kernel-name";
    argv[argc++] = filter;
    argv[argc++] = "--launch-count";
    argv[argc++] = count;
    argv[argc++] = "--csv";
    argv[argc++] = "--metrics";
    argv[argc++] = "gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,"
                   "sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,"
                   "dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed_op_local_ld.sum,"
                   "smsp__inst_executed_op_local_st.sum";
    eval_args(req, argv, argc, "--profile-run", sets);
    struct temper_proc_result pr;
    err = temper_proc_run(argv, req->timeout_s, TOOL_OUTPUT_MAX, &pr, msg, msg_size);
    if (err)
        return err;
    if (pr.exit_code == 127) {
        free(pr.output);
        return temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "ncu (Nsight Compute) is not on the PATH");
    }
    json_t *kernels = profile_kernels(pr.output);
    if (!json_array_size(kernels)) {
        char tail[1500];
        size_t len = strlen(pr.output);
        snprintf(tail, sizeof(tail), "%s", pr.output + (len > 1400 ? len - 1400 : 0));
        json_decref(kernels);
        free(pr.output);
        return temper_fail(msg, msg_size, TEMPER_EDEVICE, "Nsight Compute reported no kernels%s:\n%s",
                           pr.timed_out ? " (it ran past its time limit)" : "", tail);
    }
    free(pr.output);
    *out = json_pack("{s:o}", "kernels", kernels);
    return 0;
}

int temper_deep_sanitize_unsupported(struct temper_result *r)
{
    const char *lang = r->device_info ? r->device_info->language : NULL;
    if (!lang || !strcmp(lang, "cuda"))
        return 0;
    char msg[512];
    snprintf(msg, sizeof(msg), "--sanitize is not supported on %s device %s: compute-sanitizer checks CUDA "
             "kernels only; nothing was checked", lang, r->device_info->id ? r->device_info->id : "(null)");
    temper_result_set_value(&r->sanitize, json_pack("{s:s}", "error", msg));
    return 1;
}

/* Runs compute-sanitizer and puts its findings in r's sanitize (its own object, built here, with the
 * mode), or why it did not run; errors (with strict, warnings too) make the verdict incorrect. */
static void deep_sanitize(struct temper_deep_request *req, struct temper_result *r, int sanitize)
{
    char msg[2048];
    json_t *found = NULL;
    if (temper_deep_sanitize(req, &found, msg, sizeof(msg))) {
        temper_result_set_value(&r->sanitize, json_pack("{s:s}", "error", msg));
        return;
    }
    json_int_t errors = 0, warnings = 0;
    const char *tool;
    json_t *findings;
    json_object_foreach(found, tool, findings)
    {
        errors += json_integer_value(json_object_get(findings, "errors"));
        warnings += json_integer_value(json_object_get(findings, "warnings"));
    }
    char summary[1024], text[1400];
    temper_sanitize_summary(found, summary, sizeof(summary));
    json_object_set_new(found, "mode", json_string(sanitize == TEMPER_SANITIZE_STRICT ? "strict" : "report"));
    temper_result_set_value(&r->sanitize, found);
    if (!errors && !(sanitize == TEMPER_SANITIZE_STRICT && warnings))
        return;
    if (errors)
        snprintf(text, sizeof(text), "compute-sanitizer reported %lld error%s%s (%s)", (long long)errors,
                 errors == 1 ? "" : "s", warnings ? " and warnings" : "", summary);
    else
        snprintf(text, sizeof(text), "compute-sanitizer reported %lld warning%s, which --sanitize=strict fails (%s)",
                 (long long)warnings, warnings == 1 ? "" : "s", summary);
    temper_result_set_text(&r->verdict, "incorrect");
    temper_result_set_text(&r->message, text);
}

void temper_deep_check_result(struct temper_deep_request *req, struct temper_result *r, int sanitize, int profile)
{
    if (sanitize && temper_deep_sanitize_unsupported(r))
        sanitize = 0;
    if (sanitize)
        deep_sanitize(req, r, sanitize);
    if (profile) {
        char msg[2048];
        json_t *prof = NULL;
        if (temper_deep_profile(req, &prof, msg, sizeof(msg)))
            prof = json_pack("{s:s}", "error", msg);
        const struct temper_result_timing *t = temper_result_first_timing(r);
        json_t *k0 = json_array_get(json_object_get(prof, "kernels"), 0);
        if (t && k0 && json_array_size(json_object_get(prof, "kernels")) == 1) /* a null median reads 0 */
            json_object_set_new(prof, "ncu_over_temper",
                                json_real(json_number_value(json_object_get(k0, "duration_ms")) / t->median_ms.v));
        temper_result_set_value(&r->profile, prof);
    }
}

/* A result held as JSON is read leniently (a key missing or of another type reads as null, as the
 * deep checks always read it), checked, and written again in place by the generated writer. */
void temper_deep_check(struct temper_deep_request *req, json_t *result, int sanitize, int profile)
{
    struct temper_result r;
    if (temper_result_from_stored(result, &r))
        return;
    temper_deep_check_result(req, &r, sanitize, profile);
    json_t *out = temper_result_to_json(&r);
    temper_result_free(&r);
    json_object_clear(result);
    json_object_update(result, out);
    json_decref(out);
}
