/* candidate_files.h: the candidate files of one backend in a folder, for the test programs. */
#ifndef TEMPER_TESTS_CANDIDATE_FILES_H
#define TEMPER_TESTS_CANDIDATE_FILES_H

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

static int candidate_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of the .cu (backend "cuda") or .cl (any other) files in dir, in name order, into
 * *names (the caller frees each and the array). Returns how many, or -1 if dir cannot be read. */
static int candidate_files(const char *dir, const char *backend, char ***names)
{
    const char *ext = !strcmp(backend, "cuda") ? ".cu" : ".cl";
    *names = NULL;
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len <= 3 || strcmp(e->d_name + len - 3, ext))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 32;
            char **grown = realloc(*names, (size_t)cap * sizeof(char *));
            if (!grown)
                break;
            *names = grown;
        }
        (*names)[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n)
        qsort(*names, (size_t)n, sizeof(char *), candidate_name_cmp);
    return n;
}

#endif
