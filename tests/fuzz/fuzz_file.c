/* fuzz_file.c -- the file a path-taking target reads (fuzz.h). */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void fuzz_write_file(const uint8_t *data, size_t size, const char *suffix,
                     char *path) {
    const char *dir = getenv("TMPDIR");
    snprintf(path, 128, "%s/aegis-fuzz-%d%s", dir && *dir ? dir : "/tmp",
             (int)getpid(), suffix);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
        perror(path);
        abort();
    }
}
