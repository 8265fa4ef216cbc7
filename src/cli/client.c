/* client.c -- what the `aegis` subcommands that talk to aegisd share
 * besides the connection (client_conn.c): their options, job ids, and
 * --json output.
 */
#include "client.h"

#include "cli.h"

#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>

void client_cmd_line(json_t *cmd, char *line, size_t size) {
    size_t at = 0;
    size_t i;
    json_t *w;
    snprintf(line, size, "%s", cmd ? "" : "-");
    json_array_foreach(cmd, i, w) {
        int n = snprintf(line + at, size - at, "%s%s", i ? " " : "",
                         json_string_value(w));
        if (n < 0 || (size_t)n >= size - at) break;
        at += (size_t)n;
    }
}

bool client_user_exists(const char *cmd, const char *user) {
    if (user[0] && strspn(user, "0123456789") == strlen(user)) return true;
    if (getpwnam(user)) return true;
    fprintf(stderr, "aegis %s: -u %s: no such user on this machine (a login "
            "name or a uid)\n", cmd, user);
    return false;
}

int client_parse_id(const char *cmd, const char *text, json_int_t *id) {
    long v;
    if (cli_parse_long(cmd, "ID", text, 1, 0x7fffffffL, &v) != 0) return -1;
    *id = v;
    return 0;
}

int client_options(const char *cmd, int argc, char **argv, const char *help,
                   const char *allowed, int min_args, int max_args,
                   client_flags *f) {
    static const struct option opts[] = {
        {"socket", required_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},
        {"all", no_argument, NULL, 'a'},
        {"follow", no_argument, NULL, 'f'},
        {"stderr", no_argument, NULL, 'e'},
        {"both", no_argument, NULL, 'b'},
        {"user", required_argument, NULL, 'u'},
        {"state", required_argument, NULL, 'S'},
        {"limit", required_argument, NULL, 'l'},
        {"reason", required_argument, NULL, 'r'},
        {"drain", no_argument, NULL, 'd'},
        {"history", no_argument, NULL, 'H'},
        {"spark", no_argument, NULL, 'k'},
        {"svg", required_argument, NULL, 'g'},
        {"slurm-job", required_argument, NULL, 'L'},
        {"priority", no_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(f, 0, sizeof(*f));
    int ch;
    while ((ch = getopt_long(argc, argv, "hfu:", opts, NULL)) != -1) {
        if (ch == 'h') {
            fputs(help, stdout);
            return -1;
        }
        if (ch == 's') {
            f->socket = optarg;
            continue;
        }
        if (ch == '?' || !strchr(allowed, ch)) goto usage;
        switch (ch) {
        case 'j': f->json = 1; break;
        case 'a': f->all = 1; break;
        case 'f': f->follow = 1; break;
        case 'e': f->err_stream = 1; break;
        case 'b': f->both = 1; break;
        case 'u':
            if (!client_user_exists(cmd, optarg)) return CLI_USAGE;
            f->user = optarg;
            break;
        case 'S': f->states = optarg; break;
        case 'l': f->limit = optarg; break;
        case 'r': f->reason = optarg; break;
        case 'd': f->drain = 1; break;
        case 'H': f->history = 1; break;
        case 'k': f->history = f->spark = 1; break;
        case 'g': f->history = 1; f->svg = optarg; break;
        case 'L': f->slurm_job = optarg; break;
        case 'P': f->priority = 1; break;
        }
    }
    f->first_arg = optind;
    int nargs = argc - optind;
    if (nargs >= min_args && (max_args < 0 || nargs <= max_args)) return 0;
usage:
    fprintf(stderr, "aegis %s: bad usage\nRun 'aegis %s --help' for usage.\n",
            cmd, cmd);
    return CLI_USAGE;
}

void client_print_json(json_t *v) {
    json_dumpf(v, stdout, JSON_COMPACT);
    putchar('\n');
}
