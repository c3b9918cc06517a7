/* knowledge.h: temper's kernel knowledge base: SQLite full-text search (FTS5) over short
 * optimisation guides written for this project (the Markdown files of knowledge/: coalescing, vector loads,
 * reductions, tiling, tensor cores, Hopper's TMA and wgmma, OpenCL on CPUs) and over the store's
 * best kernels, one per task and device. The agent retrieves from it into its prompts; `temper
 * knowledge search` shows what a prompt would get; an MCP server can call the same functions. */
#ifndef TEMPER_KNOWLEDGE_H
#define TEMPER_KNOWLEDGE_H

#include <jansson.h>
#include <stddef.h>

/* Where to search. Zero means every default. Strings are borrowed for the call. */
struct temper_knowledge_config {
    const char *dir;        /* the guides' folder; NULL: $TEMPER_KNOWLEDGE, else the installed
                             * <datadir>/temper/knowledge (or ../share/temper/knowledge beside the
                             * running program) */
    const char *store_path; /* the store whose best kernels are searched; NULL: $TEMPER_HOME/temper.db;
                             * "": none */
    const char *task;       /* a task whose best kernels rank first (NULL: none) */
    const char *device;     /* only kernels timed on this device ("opencl:0"); NULL: any */
    const char *lang;       /* only kernels in this language ("cuda", "opencl"); NULL: any */
};

/* Searches for query (free text: its words are matched, any of them, stemmed) and returns at
 * most limit hits, best first, in *hits (caller decrefs): an array of objects with "kind"
 * ("guide" or "kernel"), "title", "ref" (the guide's file, or "eval N" for a kernel), "text"
 * (the guide, or the kernel's source), "rank" (FTS5's bm25: lower is better) and, for kernels,
 * "task", "device", "median_ms". A missing guides folder or store is not an error (nothing
 * comes from it); a query with no words is TEMPER_EINVALID. */
int temper_knowledge_search(const struct temper_knowledge_config *config, const char *query, int limit, json_t **hits,
                            char *msg, size_t msg_size);
/* The guides' folder a search reads (config->dir, $TEMPER_KNOWLEDGE, ../share/temper/knowledge
 * beside the running program, or the installed one), written to out: 1 if it exists, 0 if not
 * (out then names where it was looked for). A checkout's folder is knowledge/ at its root. */
int temper_knowledge_dir(const struct temper_knowledge_config *config, char *out, size_t out_size);
/* The hits as the prompt's "retrieved examples" section, cut to max_chars; *text (caller frees)
 * is "" when nothing matched. */
int temper_knowledge_prompt(const struct temper_knowledge_config *config, const char *query, int limit,
                            size_t max_chars, char **text, char *msg, size_t msg_size);

#endif
