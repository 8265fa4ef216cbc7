/* client_patient.c -- a request asked again while aegisd restarts.
 *
 * `aegis wait` and `aegis log -f` can run for hours. aegisd may restart
 * meanwhile (a package upgrade, systemd restarting it after a crash), and
 * the jobs they watch survive that: aegisd replays its state and goes on
 * watching them. So once this process has reached aegisd, a connection
 * refused or closed without an answer is asked again, every half second,
 * for a bounded time. A first call that finds no aegisd still fails at
 * once: a wrong --socket should not hang a script.
 */
#include "client.h"

#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Seconds to keep asking: $AEGIS_RECONNECT_S when it is a whole number of
 * seconds, else CLIENT_RECONNECT_S. */
static long reconnect_seconds(void) {
    const char *env = getenv("AEGIS_RECONNECT_S");
    if (!env || !env[0]) return CLIENT_RECONNECT_S;
    char *end;
    long v = strtol(env, &end, 10);
    return *end || v < 0 ? CLIENT_RECONNECT_S : v;
}

/* Whether the call that just ended lost aegisd rather than got an answer
 * or failed for another reason. */
static bool lost_daemon(bool reached) {
    client_end end = client_last_end();
    return end == CLIENT_CLOSED || (end == CLIENT_NO_DAEMON && reached);
}

json_t *client_call_patient(const char *cmd, const char *socket, json_t *req,
                            int *rc, bool *reached) {
    char why[1024] = "";
    double give_up_at = 0;
    for (;;) {
        client_complaints_to(why, sizeof(why));
        json_t *ans = client_call(cmd, socket, json_incref(req), rc);
        client_complaints_to(NULL, 0);
        bool lost = lost_daemon(*reached);
        *reached = *reached || client_last_end() != CLIENT_NO_DAEMON;
        if (ans || !lost) {
            if (give_up_at > 0 && client_last_end() == CLIENT_ANSWERED)
                fprintf(stderr, "aegis %s: aegisd is back\n", cmd);
            if (!ans) fprintf(stderr, "%s\n", why);
            json_decref(req);
            return ans;
        }
        if (give_up_at == 0) {
            long patience = reconnect_seconds();
            give_up_at = cli_now_s() + (double)patience;
            if (patience > 0)
                fprintf(stderr, "%s; asking again for up to %ld s "
                        "(AEGIS_RECONNECT_S)\n", why, patience);
        }
        if (cli_now_s() >= give_up_at) {
            fprintf(stderr, "%s\n", why);
            json_decref(req);
            return NULL;
        }
        usleep(500000);
    }
}
