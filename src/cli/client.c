/* client.c -- what the `aegis` subcommands that talk to aegisd share
 * besides the connection (client_conn.c): their options, job ids, and
 * --json output.
 */
#include "client.h"

#include "cli.h"
#include "submit.h"
#include "text_safe.h"

#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

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

/* The largest uid: (uid_t)-1 is no one's, the "no change" of chown(2). */
#define CLIENT_MAX_UID ((unsigned long long)(uid_t)-1 - 1)

const char *client_user_filter(const char *cmd, const char *user,
                               char uid_text[CLIENT_UID_TEXT]) {
    if (user[0] && strspn(user, "0123456789") == strlen(user)) {
        /* aegisd matches the uid as text: one past uid_t matches no job,
         * and an empty list would say the user has none */
        errno = 0;
        unsigned long long uid = strtoull(user, NULL, 10);
        if (errno == 0 && uid <= CLIENT_MAX_UID) return user;
        fprintf(stderr, "aegis %s: -u %s: not a uid (at most %llu)\n", cmd,
                user, CLIENT_MAX_UID);
        return NULL;
    }
    const struct passwd *pw = getpwnam(user);
    if (pw && text_is_utf8(user)) return user;
    /* jansson takes no such string: the request went without a user, and
     * every user's jobs were listed. aegisd matches the uid too. */
    if (pw) {
        snprintf(uid_text, CLIENT_UID_TEXT, "%lu", (unsigned long)pw->pw_uid);
        return uid_text;
    }
    char safe[256];
    text_safe(safe, sizeof(safe), user);
    fprintf(stderr, "aegis %s: -u %s: no such user on this machine (a login "
            "name or a uid)\n", cmd, safe);
    return NULL;
}

int client_parse_id(const char *cmd, const char *text, json_int_t *id) {
    long v;
    if (cli_parse_long(cmd, "ID", text, 1, 0x7fffffffL, &v) != 0) return -1;
    *id = v;
    return 0;
}

/* Says on stderr that the command was misused, and why; CLI_USAGE. */
__attribute__((format(printf, 2, 3)))
static int client_usage(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "aegis %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nRun 'aegis %s --help' for usage.\n", cmd);
    va_end(ap);
    return CLI_USAGE;
}

int client_bad_option(const char *cmd) {
    fprintf(stderr, "Run 'aegis %s --help' for usage.\n", cmd);
    return CLI_USAGE;
}

int client_operands(const char *cmd, int argc, char **argv,
                           int min_args, int max_args) {
    int nargs = argc - optind;
    if (max_args >= 0 && nargs > max_args)
        return client_usage(cmd, "unexpected argument '%s'",
                            argv[optind + max_args]);
    if (nargs >= min_args) return 0;
    return client_usage(cmd, "%s%d argument%s expected, %d given",
                        max_args == min_args ? "" : "at least ", min_args,
                        min_args == 1 ? "" : "s", nargs);
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
    int ch, at;
    /* at: the long option's index, left as it is for a short one */
    while ((at = -1, ch = getopt_long(argc, argv, "hfu:", opts, &at)) != -1) {
        if (ch == 'h') {
            fputs(help, stdout);
            return -1;
        }
        if (ch == 's') {
            f->socket = optarg;
            continue;
        }
        if (ch == '?') return client_bad_option(cmd);
        if (!strchr(allowed, ch)) {
            /* an option of other commands: as unknown here as any */
            char name[32];
            if (at >= 0) snprintf(name, sizeof(name), "--%s", opts[at].name);
            else snprintf(name, sizeof(name), "-%c", ch);
            return client_usage(cmd, "unknown option '%s'", name);
        }
        switch (ch) {
        case 'j': f->json = 1; break;
        case 'a': f->all = 1; break;
        case 'f': f->follow = 1; break;
        case 'e': f->err_stream = 1; break;
        case 'b': f->both = 1; break;
        case 'u':
            f->user = client_user_filter(cmd, optarg, f->user_uid);
            if (!f->user) return CLI_USAGE;
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
    return client_operands(cmd, argc, argv, min_args, max_args);
}


/* Another user's text (a name stored before names were checked, a
 * directory, a notifier's command) reaches root's terminal in --json
 * too: each character a terminal would act on (text_safe.h) is written
 * as its \uXXXX escape, so the JSON reads back the same. jansson has
 * escaped C0 already; it writes C1 controls and bidirectional marks raw
 * and those appear only inside strings. */
void client_print_json(json_t *v) {
    client_print_json_as(v, JSON_COMPACT);
}

bool client_text_option(const char *cmd, const char *opt, const char *value) {
    if (text_is_utf8(value)) return true;
    fprintf(stderr, "aegis %s: --%s: not UTF-8 text\n", cmd, opt);
    return false;
}

bool client_request_path(const char *cmd, const char *what, const char *path,
                         const char *remedy) {
    char err[4600];
    if (submit_path_ok(what, path, remedy, err, sizeof(err))) return true;
    fprintf(stderr, "aegis %s: %s\n", cmd, err);
    return false;
}

/* Writes text to stdout with each character a terminal would act on
 * (text_safe.h) replaced: by '?', or with json by its \uXXXX escape (a
 * raw newline kept: JSON_INDENT's layout; one in a string is escaped by
 * jansson). Every character text_is_control() names is below U+10000,
 * so one \uXXXX says it. */
static void print_safe(const char *text, bool json) {
    const char *run = text;
    for (const char *s = text; *s;) {
        size_t len = text_char_len(s);
        if (!(json && *s == '\n') && text_is_control(s, len)) {
            fwrite(run, 1, (size_t)(s - run), stdout);
            if (json)
                printf("\\u%04lx", text_code_point(s, len));
            else
                putchar('?');
            run = s + len;
        }
        s += len;
    }
    fputs(run, stdout);
}

void client_print_safe(const char *text) {
    print_safe(text, false);
}

void client_print_json_as(json_t *v, size_t flags) {
    char *text = json_dumps(v, flags);
    if (!text) {
        fprintf(stderr, "aegis: out of memory writing JSON\n");
        return;
    }
    print_safe(text, true);
    putchar('\n');
    free(text);
}
