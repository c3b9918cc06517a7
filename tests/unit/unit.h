/* unit.h: what the unit tests share: a substring assertion and a fresh temporary folder per test
 * (with TEMPER_HOME and TEMPER_CACHE inside it), removed afterwards. Include after cmocka.h. */
#ifndef TEMPER_TESTS_UNIT_H
#define TEMPER_TESTS_UNIT_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define assert_contains(haystack, needle)                                                \
    do {                                                                                 \
        const char *h_ = (haystack), *n_ = (needle);                                     \
        if (!h_ || !strstr(h_, n_))                                                      \
            fail_msg("'%s' does not contain '%s'", h_ ? h_ : "(null)", n_);              \
    } while (0)

static inline int unit_remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* cmocka setup: *state becomes the folder's path (malloc'ed). */
static inline int make_tmp(void **state)
{
    char *dir = strdup("/tmp/temper-unit-XXXXXX");
    if (!dir || !mkdtemp(dir)) {
        free(dir);
        return -1;
    }
    char sub[4096];
    snprintf(sub, sizeof(sub), "%s/home", dir);
    setenv("TEMPER_HOME", sub, 1);
    snprintf(sub, sizeof(sub), "%s/cache", dir);
    setenv("TEMPER_CACHE", sub, 1);
    *state = dir;
    return 0;
}

/* cmocka teardown: removes the folder and everything in it. */
static inline int remove_tmp(void **state)
{
    char *dir = *state;
    if (dir)
        nftw(dir, unit_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
    return 0;
}

#endif
