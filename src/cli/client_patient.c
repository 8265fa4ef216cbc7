/* client_patient.c -- a request asked again while aegisd restarts.
 *
 * `aegis wait` and `aegis log -f` can run for hours. aegisd may restart
 * meanwhile (a package upgrade, systemd restarting it after a crash), and
 * the jobs they watch survive that: aegisd replays its state and goes on
 * watching them. So once this process has reached aegisd, a connection
 * refused or closed without an answer is asked again, every half second,
 * for a bounded time, as is a request a stopped aegisd left unanswered
 * past $AEGIS_TIMEOUT_S. A first call that finds no aegisd still fails
 * at once: a wrong --socket should not hang a script.
 */
#include "client.h"

#include "cli.h"

#include <stdio.h>
#include <unistd.h>

/* Whether the call that just ended lost aegisd (gone, or stopped past
 * AEGIS_TIMEOUT_S) rather than got an answer or failed for another
 * reason. */
static bool lost_daemon(bool reached) {
    client_end end = client_last_end();
    return end == CLIENT_CLOSED || end == CLIENT_TIMEOUT ||
           (end == CLIENT_NO_DAEMON && reached);
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
            long patience = client_env_seconds("AEGIS_RECONNECT_S",
                                                CLIENT_RECONNECT_S);
            give_up_at = client_now_s() + (double)patience;
            if (patience > 0)
                fprintf(stderr, "%s; asking again for up to %ld s "
                        "(AEGIS_RECONNECT_S)\n", why, patience);
        }
        if (client_now_s() >= give_up_at) {
            fprintf(stderr, "%s\n", why);
            json_decref(req);
            return NULL;
        }
        usleep(500000);
    }
}
