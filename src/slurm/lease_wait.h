/* lease_wait.h -- the plugin's wait for a lease's grant (lease_wait.c):
 * one request on aegisd's socket, whose answer may take hours, waited for
 * in bounded steps so that the task can stop waiting when its Slurm job
 * ends meanwhile (docs/slurm.md, "Job ended while it waits").
 */
#ifndef AEGIS_SLURM_LEASE_WAIT_H
#define AEGIS_SLURM_LEASE_WAIT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* How a wait ended. */
typedef enum lease_wait_end {
    LEASE_ANSWERED,  /* *answer holds aegisd's answer, ok or not */
    LEASE_NO_DAEMON, /* no one listens on the socket (aegisd stopped) */
    LEASE_CLOSED,    /* aegisd hung up before it answered (it stopped) */
    LEASE_STOPPED,   /* still() said stop: the request was withdrawn */
    LEASE_ERROR,     /* anything else (err says what) */
} lease_wait_end;

/* Asked during a wait whether to go on (false stops it):
 * LEASE_WAIT_CHECK_S seconds in, then after steps that double up to
 * LEASE_WAIT_CHECK_MAX_S (lease_check_step). Each ask is a call to
 * slurmctld from each waiting task, and a task that has waited long is
 * likely to wait longer; the cap bounds how late a task sees its job
 * ended, below Slurm's default UnkillableStepTimeout (60 s). */
typedef bool (*lease_wait_still)(void *arg);
#define LEASE_WAIT_CHECK_S 3
#define LEASE_WAIT_CHECK_MAX_S 30

/* The seconds between a wait's ask and the next, after a step of step_s:
 * twice as long, at most LEASE_WAIT_CHECK_MAX_S. */
double lease_check_step(double step_s);

/* Sends req (taken) as one line to aegisd at socket_path and waits for
 * the answer line, asking still(arg) between steps. Leaving the wait
 * closes the connection, which aegisd takes as the request withdrawn. */
lease_wait_end lease_wait(const char *socket_path, json_t *req,
                          lease_wait_still still, void *arg, json_t **answer,
                          char *err, size_t errlen);

#endif
