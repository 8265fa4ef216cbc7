/* autogroup.h -- what a session weighs, where the kernel shares CPU time
 * by session (autogroup.c). */
#ifndef AEGIS_AUTOGROUP_H
#define AEGIS_AUTOGROUP_H

#include <sys/types.h>

/* The nice values a session's autogroup takes: those of a process. */
#define AUTOGROUP_NICE_MAX 19

/* What each job's session, and its watcher's, weighs as by default
 * (job_session_nice): 110 against a login session's 1024, so that the 8
 * jobs of an 8-GPU server weigh about as one session together, as a
 * task-spooler's do (they share its session). */
#define AUTOGROUP_JOB_NICE_DEFAULT 10

/* Sets the autogroup of the calling process's session to the process's
 * nice value (put in *nice_value): 0 done, 1 nothing to do (nice 0, or a
 * session it does not lead), -1 with errno where the kernel refused (no
 * autogroups, or a negative value without CAP_SYS_NICE). */
int autogroup_nice_as_process(int *nice_value);

/* Makes the session that process pid (0: the caller) leads weigh as
 * nice_value: 0, or -1 with errno (ESRCH: no such process; EPERM: pid
 * leads no session; ENOENT: no autogroups; EAGAIN: another change on the
 * machine less than a tenth of a second before, which the kernel refuses
 * without CAP_SYS_ADMIN). 0 at once when nice_value is 0, a new session's
 * own. */
int autogroup_set_nice(pid_t pid, int nice_value);

#endif
