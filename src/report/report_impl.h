/* report_impl.h: what the report's files share: the SVG plot frame and its
 * coordinate mapping, and HTML output helpers. Everything writes to a FILE; a write error is
 * found once at the end (ferror). */
#ifndef TEMPER_REPORT_IMPL_H
#define TEMPER_REPORT_IMPL_H

#include <stddef.h>
#include <stdio.h>

#include "report/report.h"

/* ---- svg.c: plots ---- */

/* One axis: its data range and scale. */
struct svg_axis {
    double lo;         /* the data value at the axis's start (> 0 when log) */
    double hi;         /* at its end */
    int log;           /* 1: log10 scale */
    const char *label; /* its title, with the unit */
};

/* A plot: the inner rectangle in SVG user units and its two axes. */
struct svg_plot {
    double width, height;             /* the whole SVG */
    double left, top, inner_w, inner_h; /* the plotting rectangle */
    struct svg_axis x, y;             /* the axes */
};

/* Lays out a plot of the given size with room for ticks and titles. */
void svg_plot_init(struct svg_plot *p, double width, double height, struct svg_axis x, struct svg_axis y);
/* A data value's position on the page: x to the right, y downwards. */
double svg_px(const struct svg_plot *p, double x);
double svg_py(const struct svg_plot *p, double y);
/* A log axis's range: whole decades around [lo, hi] (both > 0) with at least one decade. */
void svg_log_range(double lo, double hi, double *out_lo, double *out_hi);
/* A linear axis's range from 0 (or lo when negative) to a round value at or above hi. */
void svg_linear_range(double lo, double hi, double *out_lo, double *out_hi);
/* Opens the <svg> element (id, an accessible title) with the frame, grid, ticks and axis titles,
 * and the data-* attributes that give the mapping (data-x-lo, data-x-hi, data-x-log, data-left,
 * ... on the element with class "plot"). Close with svg_end. */
void svg_begin(FILE *f, const struct svg_plot *p, const char *id, const char *title);
void svg_end(FILE *f);
/* Clips data values to the plot's rectangle (for lines that run past it). */
void svg_clip_path(FILE *f, const struct svg_plot *p, const char *id);

/* ---- html.c: the document ---- */

/* Writes s with &, <, >, " and ' escaped. */
void html_text(FILE *f, const char *s);
/* The same for n bytes. */
void html_textn(FILE *f, const char *s, size_t n);
/* Opens the document: doctype, title, the style sheet (no external resource). */
void html_begin(FILE *f, const char *title);
/* Closes it, with a footer naming temper and the store. */
void html_end(FILE *f, const char *store_path);
/* A figure's caption paragraph. */
void html_caption(FILE *f, const char *text);
/* One card of the cards row: a key, its value in large type and a note under it. */
void html_card(FILE *f, const char *key, const char *value, const char *note);
/* The source of the new kernel with its differences from the old one, as a table (line numbers,
 * removed lines red, added green), headed by a summary ("12 lines added, 3 removed"). */
void html_diff(FILE *f, const char *old_name, const char *old_text, const char *new_name, const char *new_text);
/* Formats a rate given in giga-units per second (GB/s, GFLOP/s) with 3 or 4 significant digits,
 * in tera-units from 1000 on: "4.30 TB/s", "87.7 GFLOP/s". unit is "B" or "FLOP". */
const char *fmt_rate(double giga, const char *unit, char *out, size_t size);
/* Formats a time in ms with 4 significant digits, "-" for none; out has at least 32 bytes. */
const char *fmt_ms(double ms, char *out, size_t size);

/* Colours of the report (one palette, so the plots and the table agree). */
#define COLOR_POINT "#2563eb"
#define COLOR_BEST "#d97706"
#define COLOR_BASELINE "#475569"
#define COLOR_EXPERT "#059669"
#define COLOR_FAIL "#dc2626"
#define COLOR_ROOF "#0f172a"

#endif
