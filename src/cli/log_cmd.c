/* log_cmd.c -- `aegis log`: a job's output, or its user's last job's,
 * followed with -f while the job runs. */
#include "cli.h"
#include "client.h"
#include "jobs_cli.h"
#include "b64.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char log_help[] =
"NAME\n    aegis log - print a job's output\n\n"
"SYNOPSIS\n    aegis log [ID] [-f] [--stderr | --both] [--socket PATH]\n\n"
"DESCRIPTION\n"
"    Prints what the job wrote to stdout (with --stderr, to stderr) over\n"
"    all its attempts. Only the job's owner or root may read it. Without\n"
"    an ID, the job is the last one you submitted: aegis log -f follows\n"
"    it, as task-spooler's tsp -t does. With -f, when aegisd stops or\n"
"    restarts under it, it says so on stderr and asks again every half\n"
"    second, for up to $AEGIS_RECONNECT_S seconds (default 120; 0: exit\n"
"    1 at once), then goes on where it was.\n\n"
"OPTIONS\n"
"    -f, --follow    keep printing new output until the job finishes\n"
"    --stderr        the job's stderr instead of its stdout\n"
"    --both          stdout and stderr together, on stdout. aegisd keeps\n"
"                    the two streams in separate files, so they are\n"
"                    interleaved by what each read returns (up to 64 KiB\n"
"                    of one, then of the other; with -f, what arrived in\n"
"                    each quarter second), not in the exact order the job\n"
"                    wrote them. For the exact order, have the job write\n"
"                    both to one stream (aegis submit 'CMD 2>&1')\n" SOCKET_OPT EXIT_STATUS;


/* Writes the log bytes of a `log` answer, in base64 there, to stdout. */
static int log_print(json_t *ans) {
    json_t *data = json_object_get(ans, "base64");
    size_t len = json_string_length(data), n = 0;
    unsigned char *bytes = malloc(len / 4 * 3 + 1);
    int rc = CLI_OK;
    if (!bytes || !json_is_string(data) ||
        b64_decode(json_string_value(data), len, bytes, &n) != 0) {
        fprintf(stderr, "aegis log: aegisd's answer holds no base64 log\n");
        rc = CLI_FAIL;
    } else if (fwrite(bytes, 1, n, stdout) != n) {
        fprintf(stderr, "aegis log: stdout: %s\n", strerror(errno));
        rc = CLI_FAIL;
    }
    free(bytes);
    return rc;
}

/* Prints what one stream of the job holds from *offset on (one answer's
 * worth), moving *offset; *moved when it did, *finished when the job has. */
static int log_step(const client_flags *f, json_int_t id, int err_stream,
                    json_int_t *offset, bool *moved, bool *finished) {
    int rc;
    json_t *req = json_pack("{s:s, s:I, s:I, s:b}", "op", "log", "id", id,
                            "offset", *offset, "stderr", err_stream);
    /* -f outlives an aegisd restart, as `aegis wait` does; the offsets
     * say where to go on. reached: aegisd answered this process before. */
    static bool reached;
    json_t *ans = f->follow ? client_call_patient("log", client_socket(f->socket),
                                                  req, &rc, &reached)
                            : client_call("log", client_socket(f->socket), req, &rc);
    if (!ans) return rc;
    rc = log_print(ans);
    json_int_t next = job_num(ans, "offset");
    *finished = json_is_true(json_object_get(ans, "finished"));
    json_decref(ans);
    *moved = *moved || next != *offset;
    *offset = next;
    return rc;
}

/* The id of the last job this user submitted (the newest of theirs,
 * finished or not, cleared or not) into *id: 0, or an exit status after
 * saying why. */
static int log_last_job(const client_flags *f, json_int_t *id) {
    char uid[32];
    snprintf(uid, sizeof(uid), "%u", (unsigned)getuid());
    int rc;
    json_t *ans = client_call("log", client_socket(f->socket),
                              json_pack("{s:s, s:b, s:b, s:i, s:s}", "op",
                                        "ls", "all", 1, "cleared", 1, "limit",
                                        1, "user", uid),
                              &rc);
    if (!ans) return rc;
    json_t *last = json_array_get(json_object_get(ans, "jobs"), 0);
    *id = json_integer_value(json_object_get(last, "id"));
    json_decref(ans);
    if (last) return 0;
    fprintf(stderr, "aegis log: you have no jobs (name one: aegis log ID)\n");
    return CLI_USAGE;
}

int cli_log(int argc, char **argv) {
    client_flags f;
    int rc = client_options("log", argc, argv, log_help, "feb", 0, 1, &f);
    if (rc) return rc < 0 ? CLI_OK : rc;
    if (f.both && f.err_stream) {
        fprintf(stderr, "aegis log: --both already includes --stderr: give "
                "one of them\n");
        return CLI_USAGE;
    }
    json_int_t id, offset[2] = {0, 0};
    if (f.first_arg == argc) {
        if ((rc = log_last_job(&f, &id))) return rc;
    } else if (client_parse_id("log", argv[f.first_arg], &id)) {
        return CLI_USAGE;
    }
    /* A job seen finished gets one more pass: what it wrote to one stream
     * while the other was read is not lost. */
    bool ended = false;
    for (;;) {
        bool moved = false, finished = false;
        /* with --both, one answer of each stream in turn */
        for (int s = f.both ? 0 : f.err_stream; s <= (f.both ? 1 : f.err_stream);
             s++)
            if ((rc = log_step(&f, id, s, &offset[s], &moved, &finished)))
                return rc;
        if (!moved && (!f.follow || ended)) return CLI_OK;
        if (!moved && !finished) {
            fflush(stdout);
            usleep(250000); /* the job writes at its pace: poll 4 times/s */
        }
        ended = finished;
    }
}
