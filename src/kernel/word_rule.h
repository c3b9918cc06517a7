/* word_rule.h: the word rule of a candidate's source (word_rule.c), which the include rule
 * (include_rule.c) runs on the text it has spliced. */
#ifndef TEMPER_WORD_RULE_H
#define TEMPER_WORD_RULE_H

#include <stddef.h>

#include "temper/kernel.h"

/* Refuses, with TEMPER_EPARSE and a message naming path:line, the words no candidate may hold or
 * build: the preprocessor's probes of the host's files (__has_include, __has_embed and libcu++'s
 * _CCCL_HAS_INCLUDE), a _Pragma whose operand is not a string literal or names a refused pragma,
 * __pragma and _CCCL_PRAGMA, and in OpenCL C inline assembly (asm, __asm, __asm__); also any of
 * them that token pasting could build from the identifiers of the source. text is the source after
 * line splicing (len bytes, NUL-terminated), line[i] the physical line of text[i]. */
int kernel_check_words(enum temper_lang lang, const char *path, const char *text, const int *line, size_t len,
                       char *msg, size_t msg_size);

/* 1 when the n bytes at text name a pragma that reads or names the host's files, or that the
 * rule refuses for another reason: they hold "include", "dependency", "embed", "module" or
 * "__debug". */
int kernel_pragma_refused(const char *text, size_t n);
/* 1 when one of those words begins at text (NUL-terminated). */
int kernel_pragma_word_at(const char *text);

#endif
