/* fuzz_spec.c -- fuzz target (fuzz.h) of the job spec reader behind
 * `aegis submit FILE.yaml` (submit_spec(), spec.c, in aegis's and AEGIS's
 * formats): a spec is refused with a message on stderr naming the file,
 * or read into jobs that each have a command and a GPU count of at least
 * one, as aegisd's request reader wants them. Seeds: seeds/spec/.
 */
#include "fuzz.h"

#include "submit.h"

#include <jansson.h>
#include <string.h>
#include <unistd.h>

FUZZ_TOKENS(":-[]{},#\n &*!|>'\"0123456789~.ejobcmandgpusresource");

/* What the reader said on stderr goes to a file of its own, read back
 * after each spec: the target's own faults are still said on stderr. */
static FILE *said_file;

static void said_start(int *saved) {
    if (!said_file) said_file = tmpfile();
    if (!said_file) abort();
    fflush(stderr);
    /* fd 2 will share the file's offset: back to its start */
    if (ftruncate(fileno(said_file), 0) < 0 ||
        lseek(fileno(said_file), 0, SEEK_SET) < 0)
        abort();
    *saved = dup(2);
    dup2(fileno(said_file), 2);
}

static void said_end(int saved, char *said, size_t len) {
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(fileno(said_file), said, len - 1, 0);
    said[n > 0 ? n : 0] = '\0';
}

static void check_job(const json_t *job) {
    const json_t *cmd = json_object_get(job, "cmd");
    FUZZ_CHECK(json_is_string(cmd) ||
                   (json_is_array(cmd) && json_array_size(cmd) > 0),
               "a job without a command");
    FUZZ_CHECK(json_integer_value(json_object_get(job, "gpus")) >= 1,
               "a job without a GPU");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[128], said[4096];
    fuzz_write_file(data, size, ".yaml", path);
    submit_defaults def = {.gpus = 1, .mem = -1};
    json_t *jobs = json_array();
    int saved;
    said_start(&saved);
    int rc = submit_spec(path, &def, jobs, NULL);
    said_end(saved, said, sizeof(said));
    unlink(path);
    if (rc != 0) {
        if (!strstr(said, path)) fprintf(stderr, "SAID[%s]\n", said);
        FUZZ_CHECK(strstr(said, path) != NULL,
                   "a refusal that does not name the file");
    } else {
        FUZZ_CHECK(json_array_size(jobs) > 0, "a spec read into no job");
        for (size_t i = 0; i < json_array_size(jobs); i++)
            check_job(json_array_get(jobs, i));
    }
    json_decref(jobs);
    return 0;
}
