/* tmpdir.h -- removes a test's flat state folder (the test GPU's
 * AEGIS_TEST_GPU_DIR), shared by the telemetry tests. */
#ifndef AEGIS_TEST_TMPDIR_H
#define AEGIS_TEST_TMPDIR_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Unlinks every file in dir, then dir itself; the stand-in libraries
 * write no subfolders. */
static inline void tmpdir_remove(const char *dir) {
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

#endif
