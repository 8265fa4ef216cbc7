/* sup_keep.c -- a supervisor's answers kept as JSON files (supervisor.h):
 * written whole to a temporary name, synced, and renamed into place, so
 * that after a crash a file is either absent or complete. A restarted
 * supervisor trusts what it finds: evaluations (sup_eval.c), performance
 * checks (sup_perf.c), trained models' facts (sup_trained.c).
 */
#include "supervisor.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sup_keep_json(const char *path, const json_t *doc, char *err,
                  size_t errlen) {
    char tmp[4500];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    char *text = json_dumps(doc, JSON_INDENT(1) | JSON_SORT_KEYS);
    if (!text) { /* no doc (a json_pack() that failed), or no memory */
        snprintf(err, errlen, "%s: no JSON to write (out of memory)", path);
        return -1;
    }
    FILE *f = fopen(tmp, "w");
    int ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF &&
             fflush(f) == 0 && fsync(fileno(f)) == 0;
    if (f && fclose(f) != 0) ok = 0;
    free(text);
    if (!ok || rename(tmp, path) != 0) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno ? errno : EIO));
        unlink(tmp);
        return -1;
    }
    return 0;
}
