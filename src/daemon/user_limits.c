/* user_limits.c -- a job's user's limits through PAM (user_limits.h).
 * The session is never closed: the process execs the job right after,
 * and pam_limits has nothing to undo at a close. */
#include "user_limits.h"

#include <limits.h>
#include <security/pam_appl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* No module of the service asks anything: every question is refused. */
static int user_limits_conv(int n, const struct pam_message **msg,
                            struct pam_response **resp, void *data) {
    (void)n, (void)msg, (void)data;
    *resp = NULL;
    return PAM_CONV_ERR;
}

/* The folder of the service file: the test's, or the system's. */
static const char *user_limits_dir(void) {
    const char *dir = getenv("AEGIS_PAM_DIR");
    return dir && dir[0] ? dir : AEGIS_PAM_DIR;
}

int user_limits_apply(const char *user, int64_t id) {
    char path[PATH_MAX];
    const char *dir = user_limits_dir();
    snprintf(path, sizeof(path), "%s/" USER_LIMITS_SERVICE, dir);
    if (access(path, R_OK) != 0) return 0;
    const struct pam_conv conv = {user_limits_conv, NULL};
    pam_handle_t *pam = NULL;
    int rc = pam_start_confdir(USER_LIMITS_SERVICE, user, &conv, dir, &pam);
    if (rc == PAM_SUCCESS) rc = pam_open_session(pam, PAM_SILENT);
    if (rc != PAM_SUCCESS)
        dprintf(2, "aegisd: job %lld: %s: the limits of user %s: %s\n",
                (long long)id, path, user,
                pam ? pam_strerror(pam, rc) : "pam_start failed");
    if (pam) pam_end(pam, rc | PAM_DATA_SILENT);
    return rc == PAM_SUCCESS ? 0 : -1;
}
