/* autogroup.h -- aegisd's session weighs as its own nice value says
 * (autogroup.c). */
#ifndef AEGIS_AUTOGROUP_H
#define AEGIS_AUTOGROUP_H

/* Sets the autogroup of the calling process's session to the process's
 * nice value (put in *nice_value): 0 done, 1 nothing to do (nice 0, or a
 * session it does not lead), -1 with errno where the kernel refused (no
 * autogroups, or a negative value without CAP_SYS_NICE). */
int autogroup_nice_as_process(int *nice_value);

#endif
