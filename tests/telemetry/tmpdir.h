/* tmpdir.h -- makes and removes a test's flat state folder (the test
 * GPU's AEGIS_TEST_GPU_DIR), shared by the telemetry tests. */
#ifndef AEGIS_TEST_TMPDIR_H
#define AEGIS_TEST_TMPDIR_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Makes a fresh folder /tmp/<prefix>-XXXXXX into dir and points the test
 * GPUs at it, with `shape` (AEGIS_TEST_GPUS) GPUs. Returns 0, or -1. */
static inline int tmpdir_make_gpus(char *dir, size_t len, const char *prefix,
                                   const char *shape) {
    snprintf(dir, len, "/tmp/%s-XXXXXX", prefix);
    if (!mkdtemp(dir))
        return -1;
    setenv("AEGIS_TEST_GPU_DIR", dir, 1);
    setenv("AEGIS_TEST_GPUS", shape, 1);
    return 0;
}

/* The text of file `name` in dir ("" when it is missing), in a buffer the
 * next call reuses: the call logs the test libraries write. */
static inline const char *tmpdir_read(const char *dir, const char *name) {
    static char buf[16384];
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "r");
    size_t n = fp ? fread(buf, 1, sizeof buf - 1, fp) : 0;
    if (fp)
        fclose(fp);
    buf[n] = '\0';
    return buf;
}

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
