/* html.c: the report's document: escaping, the page's head with its style sheet (inline: the
 * report reads offline and needs no script), and the source listing with its differences from
 * the baseline. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_impl.h"

void html_textn(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; s && i < n; i++) {
        switch (s[i]) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&#39;", f);
            break;
        default:
            fputc(s[i], f);
        }
    }
}

void html_text(FILE *f, const char *s)
{
    html_textn(f, s, s ? strlen(s) : 0);
}

const char *fmt_ms(double ms, char *out, size_t size)
{
    if (!(ms > 0))
        snprintf(out, size, "-");
    else
        snprintf(out, size, "%.4g", ms);
    return out;
}

const char *fmt_rate(double giga, const char *unit, char *out, size_t size)
{
    if (giga >= 1000)
        snprintf(out, size, "%.3g T%s/s", giga / 1000, unit);
    else
        snprintf(out, size, "%.3g G%s/s", giga, unit);
    return out;
}

static const char style[] =
    ":root{color-scheme:light}"
    "body{margin:0;background:#f1f5f9;color:#0f172a;font:14px/1.45 system-ui,-apple-system,'Segoe UI',"
    "Roboto,'Helvetica Neue',Arial,sans-serif}"
    "header{background:#0f172a;color:#f8fafc;padding:18px 32px}"
    "header h1{margin:0;font-size:20px;font-weight:600;letter-spacing:.01em}"
    "header .sub{color:#94a3b8;font-size:13px;margin-top:4px}"
    "main{max-width:1180px;margin:0 auto;padding:20px 32px 40px}"
    "section{background:#fff;border:1px solid #e2e8f0;border-radius:8px;padding:16px 20px;margin:0 0 18px}"
    "h2{font-size:15px;font-weight:600;margin:0 0 10px;color:#0f172a}"
    ".cards{display:flex;flex-wrap:wrap;gap:12px;margin:0 0 18px}"
    ".card{flex:1 1 150px;background:#fff;border:1px solid #e2e8f0;border-radius:8px;padding:10px 14px}"
    ".card .k{font-size:11px;text-transform:uppercase;letter-spacing:.06em;color:#64748b}"
    ".card .v{font-size:20px;font-weight:600;margin-top:2px;font-variant-numeric:tabular-nums}"
    ".card .n{font-size:12px;color:#64748b}"
    ".row{display:flex;flex-wrap:wrap;gap:18px}.row>section{flex:1 1 520px;min-width:0}"
    "svg.chart{max-width:100%;height:auto;display:block}"
    "p.caption{color:#475569;font-size:12.5px;margin:8px 0 0}"
    ".legend{display:flex;flex-wrap:wrap;gap:14px;font-size:12px;color:#334155;margin:6px 0 0}"
    ".legend span{display:inline-flex;align-items:center;gap:5px}"
    ".sw{display:inline-block;width:10px;height:10px;border-radius:50%}"
    "table{border-collapse:collapse;width:100%;font-size:12.5px}"
    "th{text-align:left;font-weight:600;color:#475569;border-bottom:2px solid #e2e8f0;padding:6px 8px;"
    "white-space:nowrap}"
    "td{border-bottom:1px solid #f1f5f9;padding:5px 8px;vertical-align:top}"
    "td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
    "tr.best td{background:#fffbeb}"
    ".v-correct{color:#15803d;font-weight:600}.v-bad{color:#b91c1c;font-weight:600}"
    "code,pre,.src{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,'Liberation Mono',monospace;"
    "font-size:12px}"
    ".opt{white-space:nowrap}"
    "table.src td{border:0;padding:0 8px;white-space:pre}"
    "table.src td.ln{color:#94a3b8;text-align:right;user-select:none;width:1%}"
    "table.src tr.add td{background:#ecfdf5}table.src tr.add td.code{color:#065f46}"
    "table.src tr.del td{background:#fef2f2}table.src tr.del td.code{color:#991b1b}"
    "table.src td.op{color:#64748b;width:1%}"
    ".scroll{overflow-x:auto}.muted{color:#64748b}"
    "footer{color:#64748b;font-size:12px;text-align:center;padding:0 0 24px}";

void html_begin(FILE *f, const char *title)
{
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
               "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>");
    html_text(f, title);
    fprintf(f, "</title>\n<style>%s</style>\n</head>\n<body>\n", style);
}

void html_end(FILE *f, const char *store_path)
{
    fprintf(f, "</main>\n<footer>Made by <code>temper report</code> from the store <code>");
    html_text(f, store_path);
    fprintf(f, "</code>. Every point carries its evaluation's id and values as data attributes.</footer>\n"
               "</body>\n</html>\n");
}

void html_caption(FILE *f, const char *text)
{
    fprintf(f, "<p class=\"caption\">");
    html_text(f, text);
    fprintf(f, "</p>\n");
}

/* One row of the listing. */
static void diff_row(FILE *f, const struct temper_diff_line *d)
{
    const char *cls = d->op == '+' ? " class=\"add\"" : d->op == '-' ? " class=\"del\"" : "";
    fprintf(f, "<tr%s><td class=\"ln\">", cls);
    if (d->old_no)
        fprintf(f, "%d", d->old_no);
    fprintf(f, "</td><td class=\"ln\">");
    if (d->new_no)
        fprintf(f, "%d", d->new_no);
    fprintf(f, "</td><td class=\"op\">%c</td><td class=\"code\">", d->op);
    html_textn(f, d->text, d->len);
    fprintf(f, "</td></tr>\n");
}

void html_diff(FILE *f, const char *old_name, const char *old_text, const char *new_name, const char *new_text)
{
    struct temper_diff_line *d = NULL;
    size_t n = 0;
    if (!old_text || temper_diff_lines(old_text, new_text, &d, &n)) {
        /* no baseline, or too long to diff: the source alone */
        free(d);
        d = NULL;
        if (temper_diff_lines("", new_text, &d, &n)) {
            fprintf(f, "<pre>");
            html_text(f, new_text);
            fprintf(f, "</pre>\n");
            return;
        }
        for (size_t i = 0; i < n; i++)
            d[i].op = ' ';
        fprintf(f, "<p class=\"muted\">No baseline source to compare with.</p>\n");
    } else {
        size_t added = 0, removed = 0;
        for (size_t i = 0; i < n; i++)
            added += d[i].op == '+', removed += d[i].op == '-';
        fprintf(f, "<p class=\"muted\">Differences from <code>");
        html_text(f, old_name);
        fprintf(f, "</code> to <code>");
        html_text(f, new_name);
        fprintf(f, "</code>: <span class=\"v-correct\">%zu line%s added</span>, "
                   "<span class=\"v-bad\">%zu removed</span>, %zu kept (longest common subsequence of lines).</p>\n",
                added, added == 1 ? "" : "s", removed, n - added - removed);
    }
    fprintf(f, "<div class=\"scroll\"><table class=\"src\" id=\"diff\" data-added=\"");
    size_t added = 0, removed = 0;
    for (size_t i = 0; i < n; i++)
        added += d[i].op == '+', removed += d[i].op == '-';
    fprintf(f, "%zu\" data-removed=\"%zu\">\n", added, removed);
    for (size_t i = 0; i < n; i++)
        diff_row(f, &d[i]);
    fprintf(f, "</table></div>\n");
    free(d);
}

void html_card(FILE *f, const char *key, const char *value, const char *note)
{
    fprintf(f, "<div class=\"card\"><div class=\"k\">");
    html_text(f, key);
    fprintf(f, "</div><div class=\"v\">");
    html_text(f, value);
    fprintf(f, "</div><div class=\"n\">");
    html_text(f, note);
    fprintf(f, "</div></div>\n");
}
