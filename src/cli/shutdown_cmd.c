/* shutdown_cmd.c -- `aegis shutdown`: stops aegisd from the command line,
 * as SIGTERM does, and returns once it is gone.
 *
 * aegisd answers, then exits; the connection stays open until it does, so
 * its end is the sign that aegisd has stopped serving. Its pid comes from
 * the socket's peer credentials (in this process's pid namespace, unlike a
 * number aegisd would send), and aegis waits for that process to be gone,
 * so that a new aegisd started right after finds its state folder free.
 */
#include "cli.h"
#include "client.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

static const char help[] =
"NAME\n    aegis shutdown - stop aegisd\n\n"
"SYNOPSIS\n    aegis shutdown [--drain] [--socket PATH]\n\n"
"DESCRIPTION\n"
"    Stops aegisd as SIGTERM does: it takes no more requests and exits.\n"
"    Running jobs keep running, and the next aegisd on the same state\n"
"    folder re-adopts them; queued jobs stay queued for it. With --drain,\n"
"    aegisd first waits for its running jobs to end (as aegisd\n"
"    --drain-on-stop does), starting no new one. aegis shutdown returns\n"
"    once aegisd has exited, saying what became of the running jobs.\n"
"    Only root or the user aegisd runs as may shut it down.\n\n"
"    Under systemd, systemctl stop aegisd is the usual way; aegis shutdown\n"
"    suits an aegisd started by hand.\n\n"
"    Without --drain it waits $AEGIS_TIMEOUT_S seconds (default 60; 0: no\n"
"    limit) for the answer, and as long again for aegisd's exit, then\n"
"    exits 1: aegisd is stopped or stuck. With --drain it waits for the\n"
"    exit as long as the jobs run.\n\n"
"OPTIONS\n"
"    --drain         wait for the running jobs to end first (this can\n"
"                    take as long as the longest of them)\n"
"    --socket PATH   aegisd's socket (default $AEGIS_SOCKET, else\n"
"                    " CLIENT_DEFAULT_SOCKET ")\n"
"\nEXIT STATUS\n"
"    0 aegisd stopped, 1 aegisd unreachable, busy or failing, 2 bad usage\n"
"    or a request aegisd refused (not root or aegisd's user).\n";

/* Reads fd until aegisd closes it (its exit): true, or false at
 * give_up_at (client_deadline(); 0: no limit). */
static bool shutdown_wait_close(int fd, double give_up_at) {
    char buf[512];
    for (;;) {
        if (client_await(fd, give_up_at) != 0 && errno == ETIMEDOUT)
            return false;
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n == 0 || (n < 0 && errno != EINTR)) return true;
    }
}

/* Waits until process pid is gone (pid 0: unknown, nothing to wait for):
 * true, or false at give_up_at (0: no limit). */
static bool shutdown_wait_gone(pid_t pid, double give_up_at) {
    while (pid > 0 && (kill(pid, 0) == 0 || errno == EPERM)) {
        if (give_up_at > 0 && client_now_s() >= give_up_at) return false;
        usleep(50000);
    }
    return true;
}

int cli_shutdown(int argc, char **argv) {
    client_flags f;
    int rc = client_options("shutdown", argc, argv, help, "d", 0, 0, &f);
    if (rc) return rc < 0 ? CLI_OK : rc;
    int fd = -1;
    json_t *ans = client_call_open("shutdown", client_socket(f.socket),
                                   json_pack("{s:s, s:b}", "op", "shutdown",
                                             "drain", f.drain),
                                   &rc, &fd);
    if (!ans) return rc;
    struct ucred peer = {0};
    socklen_t len = sizeof(peer);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0) peer.pid = 0;
    long running = (long)json_integer_value(json_object_get(ans, "running"));
    bool drain = json_is_true(json_object_get(ans, "drain"));
    json_decref(ans);
    if (drain && running > 0) {
        fprintf(stderr, "aegis shutdown: waiting for %ld running job%s to "
                "end\n", running, running == 1 ? "" : "s");
    }
    /* a stopped aegisd that answered must not hold the command for
     * ever, as it may not hold one waiting for its answer; a drain waits
     * for the jobs, for as long as they run */
    long limit_s =
        drain ? 0 : client_env_seconds("AEGIS_TIMEOUT_S", CLIENT_TIMEOUT_S);
    double give_up_at = client_deadline(limit_s);
    bool gone = shutdown_wait_close(fd, give_up_at);
    close(fd);
    gone = gone && shutdown_wait_gone(peer.pid, give_up_at);
    if (!gone) {
        fprintf(stderr, "aegis shutdown: aegisd (pid %ld) said it stops, but "
                "has not exited in %ld s (AEGIS_TIMEOUT_S): stopped, or "
                "stuck\n", (long)peer.pid, limit_s);
        return CLI_FAIL;
    }
    if (drain)
        printf("aegisd stopped after its running jobs ended\n");
    else if (running > 0)
        printf("aegisd stopped; %ld running job%s running, for the next "
               "aegisd on its state folder to re-adopt\n", running,
               running == 1 ? " keeps" : "s keep");
    else
        printf("aegisd stopped\n");
    return CLI_OK;
}
