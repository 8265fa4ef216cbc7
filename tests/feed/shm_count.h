/* shm_count.h -- the feed tests' check that nothing is left in /dev/shm:
 * how many segments there have a name starting with a prefix. */
#ifndef AEGIS_TEST_SHM_COUNT_H
#define AEGIS_TEST_SHM_COUNT_H

#include <dirent.h>
#include <string.h>

static inline int shm_count(const char *prefix) {
    int n = 0;
    DIR *d = opendir("/dev/shm");
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (!strncmp(e->d_name, prefix, strlen(prefix))) n++;
    if (d) closedir(d);
    return n;
}

#endif
