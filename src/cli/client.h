/* client.h -- the `aegis` subcommands that talk to aegisd, and the one
 * call they share: send a request line, read the answer line.
 */
#ifndef AEGIS_CLIENT_H
#define AEGIS_CLIENT_H

#include "request_words.h"

#include <jansson.h>
#include <stdbool.h>

int cli_submit(int argc, char **argv);
int cli_ls(int argc, char **argv);
int cli_show(int argc, char **argv);
int cli_cancel(int argc, char **argv);
int cli_log(int argc, char **argv);
int cli_wait(int argc, char **argv);
int cli_gpus(int argc, char **argv);
int cli_top(int argc, char **argv);
int cli_drain(int argc, char **argv);
int cli_resume(int argc, char **argv);
int cli_report(int argc, char **argv);
int cli_hold(int argc, char **argv);
int cli_update(int argc, char **argv);
int cli_priority(int argc, char **argv);
int cli_fairshare(int argc, char **argv);
int cli_db(int argc, char **argv);
int cli_clear(int argc, char **argv);
int cli_release(int argc, char **argv);
int cli_shutdown(int argc, char **argv);

/* For a command that parses its own options. After getopt has said what
 * was wrong with one: the line pointing to CMD's --help, CLI_USAGE. */
int client_bad_option(const char *cmd);
/* The words after the options (argv from optind) against [min_args,
 * max_args] (-1: any): 0, or CLI_USAGE after naming the first word too
 * many, or saying how many are missing. */
int client_operands(const char *cmd, int argc, char **argv, int min_args,
                    int max_args);

/* The socket: --socket if given (NULL otherwise), else $AEGIS_SOCKET, else
 * CLIENT_DEFAULT_SOCKET. */
#define CLIENT_DEFAULT_SOCKET "/run/aegis/aegis.sock"
const char *client_socket(const char *opt);

/* Sends req (taken) to aegisd and returns its answer. On a failure to
 * connect, or an answer with "ok": false, prints "aegis CMD: ..." and
 * returns NULL with *rc the exit status to end with: CLI_USAGE when aegisd
 * refused the request (bad input, no such job, not the caller's),
 * CLI_FAIL when it could not be reached, was busy, failed itself, or did
 * not answer in $AEGIS_TIMEOUT_S seconds (default CLIENT_TIMEOUT_S; 0: no
 * limit): a stopped or stuck aegisd takes connections (the kernel queues
 * them) and answers none, and a script or slurmstepd's task-exit hook
 * must not wait for ever; the limit holds for the connect and the send
 * too (a stopped aegisd's queue of connections fills). Requests aegisd
 * answers once something has happened (`wait`, `cancel`, a backup) have
 * no limit. The caller owns the answer. */
#define CLIENT_TIMEOUT_S 60
json_t *client_call(const char *cmd, const char *socket, json_t *req,
                    int *rc);
/* The same, leaving the connection open in *fd once aegisd answered (the
 * caller closes it): what follows the answer, aegisd's exit, shows as
 * the connection's end. */
json_t *client_call_open(const char *cmd, const char *socket, json_t *req,
                         int *rc, int *fd);
/* client_call(), saying a refusal in w's words (request_words.h). */
json_t *client_call_words(const char *cmd, const char *socket, json_t *req,
                          const request_words *w, int *rc);
/* How the last client_call ended: with an answer (whatever it said), with
 * no aegisd to connect to (no socket file, or no one listening: stopped or
 * restarting), with the connection closed before an answer (aegisd
 * stopped or crashed meanwhile), with no answer in time (a stopped or
 * stuck aegisd), or otherwise (out of memory, a socket path too long,
 * permission denied). */
typedef enum client_end {
    CLIENT_ANSWERED,
    CLIENT_NO_DAEMON,
    CLIENT_CLOSED,
    CLIENT_TIMEOUT,
    CLIENT_OTHER,
} client_end;
client_end client_last_end(void);
/* client_call(), asked again while aegisd is away, once this process has
 * reached it: for `aegis wait` and `aegis log -f`, which outlive a
 * restart of aegisd (the jobs they watch do). It tries every half
 * second for up to $AEGIS_RECONNECT_S seconds (default
 * CLIENT_RECONNECT_S; 0 gives up at once), saying on stderr when aegisd
 * went away and when it is back. *reached: whether aegisd answered or
 * took a connection before, in or out. */
#define CLIENT_RECONNECT_S 120
json_t *client_call_patient(const char *cmd, const char *socket, json_t *req,
                            int *rc, bool *reached);
/* The whole number of seconds in environment variable name, or fallback
 * when it is unset, empty, negative or not a number. */
long client_env_seconds(const char *name, long fallback);
/* Now, in seconds of CLOCK_MONOTONIC: for deadlines and waits, which a
 * change of the wall clock must not move. */
double client_now_s(void);
/* The client_now_s() timeout_s seconds from now, or 0 (no limit) for 0. */
double client_deadline(long timeout_s);
/* Waits until fd is readable (or closed), or until give_up_at, a
 * client_deadline() or 0 for no limit: 0, or -1 with errno (ETIMEDOUT
 * when the time is up). */
int client_await(int fd, double give_up_at);
/* A connection to the Unix socket at path: its descriptor, or -1 with
 * errno (ENAMETOOLONG: the path does not fit a socket address; EAGAIN:
 * the listener's queue stayed full until give_up_at, a client_deadline()
 * or 0 for no limit, which sends on the descriptor keep too). */
int client_socket_connect(const char *path, double give_up_at);
/* Whether a connect's errno says no aegisd runs (no socket file, or no
 * one listening: stopped, or between a stop and its next start). */
bool client_no_daemon(int err);
/* Writes all n bytes of buf to fd: 0, or -1 with errno. send(), not
 * write(): a daemon that hangs up (busy, or stopping) is an EPIPE to
 * report, not a SIGPIPE that ends the caller without a word. */
int client_write_all(int fd, const char *buf, size_t n);
/* Sends what client_call would print on stderr into buf instead (one
 * message, the latest), or back to stderr when buf is NULL: for aegis
 * top's full screen, which stderr would garble. */
void client_complaints_to(char *buf, size_t size);
/* "aegis CMD: what went wrong", on stderr or into that buffer. */
void client_complain(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A uid as decimal text, its NUL included: 10 digits for 32 bits. */
#define CLIENT_UID_TEXT 24

/* The options the client subcommands share; each allows a subset. */
typedef struct client_flags {
    const char *socket;
    int json;               /* --json */
    int all;                /* --all */
    int follow;             /* -f, --follow */
    int err_stream;         /* --stderr */
    int both;               /* --both (log) */
    const char *user;       /* -u, --user USER (ls) as aegisd's filter
                               (client_user_filter()); NULL: anyone */
    char user_uid[CLIENT_UID_TEXT]; /* what user points to when -u named
                                       a login name that is not UTF-8 */
    const char *states;     /* --state S[,S...] (ls); NULL: any */
    const char *limit;      /* --limit N (ls); NULL: not given */
    const char *reason;     /* --reason TEXT (drain); NULL: none */
    int drain;              /* --drain (shutdown) */
    int history;            /* --history (show) */
    int spark;              /* --spark (show): implies --history */
    const char *svg;        /* --svg FILE (show): implies --history */
    const char *slurm_job;  /* --slurm-job ID (release); NULL: none */
    int priority;           /* --priority (ls): a PRIORITY column */
    int first_arg;          /* argv index of the first operand */
} client_flags;

/* user (-u) as a request's "user" filter: user itself when it is a uid
 * or a login name of this machine, or that user's uid, written in
 * uid_text, when the name is not UTF-8 (a JSON request cannot carry it;
 * aegisd matches a job's user by name or uid). NULL, said on stderr
 * naming the command, when it is neither a uid nor a user here. */
const char *client_user_filter(const char *cmd, const char *user,
                               char uid_text[CLIENT_UID_TEXT]);

/* Parses the options in `allowed` (letters: j --json, a --all, f
 * --follow, e --stderr, b --both, u --user, S --state, l --limit, r
 * --reason, d --drain, H --history, k --spark, g --svg, L --slurm-job,
 * P --priority;
 * --socket and --help always) and checks the operand
 * count is in [min_args, max_args] (-1: any). Returns -1 after --help
 * (printed), CLI_USAGE on bad usage (explained), 0 otherwise. */
int client_options(const char *cmd, int argc, char **argv, const char *help,
                   const char *allowed, int min_args, int max_args,
                   client_flags *f);

/* A job's command (its "cmd" array) as one line, its words joined by
 * spaces, into line; "-" when the command is not shown (NULL). */
void client_cmd_line(json_t *cmd, char *line, size_t size);

/* Prints a JSON value on one line (--json output), what a terminal would
 * act on escaped (text_safe.h). */
void client_print_json(json_t *v);

/* client_print_json, laid out by jansson's dump flags (JSON_INDENT(2)
 * for the commands whose --json is indented). */
void client_print_json_as(json_t *v, size_t flags);

/* Prints text whole, each character a terminal would act on (text_safe.h)
 * as '?', as text_safe() does into a buffer. */
void client_print_safe(const char *text);

/* Whether option --opt's value is UTF-8 text, which a request to aegisd
 * (JSON) must carry as it is: said on stderr when not ("aegis CMD: --OPT:
 * not UTF-8 text"), as jansson refuses such a string and the value was
 * left out of the request. */
bool client_text_option(const char *cmd, const char *opt, const char *value);

/* Whether path (what it is: "aegis's own path") is UTF-8 text, as a
 * request to aegisd (JSON) must carry it as it is, a word of a job's
 * command: said on stderr when not, shown safe, with what to do instead
 * ("aegis CMD: WHAT 'PATH' is not UTF-8 text ...: REMEDY"), as jansson
 * refuses such a string and the request failed with no word said. */
bool client_request_path(const char *cmd, const char *what, const char *path,
                         const char *remedy);

/* Text read from a file or the disk, or another user's (a file name, a
 * path), as a JSON string whatever its bytes: each byte that starts no
 * UTF-8 character as '?' (text_as_utf8(), text_safe.h), as jansson takes
 * no such string and the row or field holding it was lost; its controls
 * kept for the printer to escape. NULL only when out of memory. */
json_t *client_json_text(const char *text);

/* A job id argument: prints "aegis CMD: ..." and returns -1 when bad. */
int client_parse_id(const char *cmd, const char *text, json_int_t *id);

#endif
