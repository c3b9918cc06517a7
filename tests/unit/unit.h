/* unit.h: what the unit tests share: a substring assertion, a fresh temporary folder per test
 * (with TEMPER_HOME and TEMPER_CACHE inside it, removed afterwards), and the runner of one
 * regression test by name. Include after cmocka.h. */
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

/* Exit status of unit_run_known_bug when no known-bug test has the name asked for (a typo in
 * CMakeLists.txt must fail, not pass). */
#define UNIT_UNKNOWN_BUG 2

/* Runs the known-bug test named name among tests[0..n); UNIT_UNKNOWN_BUG, with a message, if
 * none has that name. */
static inline int unit_run_known_bug(const char *group, const struct CMUnitTest *tests, size_t n,
                                     const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(tests[i].name, name)) {
            const struct CMUnitTest one[] = {tests[i]};
            return cmocka_run_group_tests_name(group, one, NULL, NULL);
        }
    fprintf(stderr, "%s: no known-bug test named '%s'\n", group, name);
    return UNIT_UNKNOWN_BUG;
}

#endif
