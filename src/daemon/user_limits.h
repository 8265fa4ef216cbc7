/* user_limits.h -- the resource limits of a job's user (limits.conf), set
 * on the job's process before it becomes the user, through aegis's own
 * PAM service: /etc/pam.d/aegis, with pam_limits and nothing else. Not
 * the "other" service, nor pam_systemd: a login session of systemd's
 * would move the job into a cgroup of its own, away from aegisd's. */
#ifndef AEGIS_USER_LIMITS_H
#define AEGIS_USER_LIMITS_H

#include <stdint.h>

/* Where the service is looked for: AEGIS_PAM_DIR (CMake: /etc/pam.d), or
 * the folder $AEGIS_PAM_DIR names in aegisd's environment (a test's). */
#define USER_LIMITS_SERVICE "aegis"

/* In the job's child, as root: opens a PAM session of service "aegis" for
 * user, which sets its limits on this process. Nothing when the service
 * file is not installed (the job keeps aegisd's limits, as a job of a
 * non-root aegisd does). 0, or -1 said on stderr (the job's log). */
int user_limits_apply(const char *user, int64_t id);

#endif
