/* notify.h -- the limits of a job's notifier: the command `aegis submit
 * --notify CMD` (or the config's `notify:`) names, which aegisd runs with
 * /bin/sh -c when the job ends (done, failed, cancelled, timeout), as the
 * job's user, with what became of the job in its environment:
 *
 *   AEGIS_JOB_ID           its id
 *   AEGIS_JOB_NAME         its name ("" when none was given)
 *   AEGIS_JOB_USER         its user's login name
 *   AEGIS_JOB_STATE        done, failed, cancelled or timeout
 *   AEGIS_JOB_REASON       why, as `aegis show` says it ("exit 0", "exit 1,
 *                          out of GPU memory ...")
 *   AEGIS_JOB_EXIT_STATUS  its last attempt's exit status (128 + N when
 *                          killed by signal N); "" when it never ran or
 *                          its end was not seen
 *   AEGIS_JOB_DURATION_S   seconds its last attempt ran (0 when none did)
 *
 * aegisd never waits for a notifier (notify.c): it is reaped when it
 * exits, killed with its session after notify_timeout_s, and its failure
 * logged once, never retried; at most 32 run at once.
 */
#ifndef AEGIS_NOTIFY_H
#define AEGIS_NOTIFY_H

#define NOTIFY_DEFAULT_TIMEOUT_S 30.0
#define NOTIFY_MIN_TIMEOUT_S 1.0
#define NOTIFY_MAX_TIMEOUT_S 86400.0

#endif
