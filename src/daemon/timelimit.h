/* timelimit.h -- a job's time limit as Slurm users write it (`aegis submit
 * --time`), and as aegis shows it. Pure: the CLI parses with it, aegisd
 * formats with it, the unit tests drive it alone.
 */
#ifndef AEGIS_TIMELIMIT_H
#define AEGIS_TIMELIMIT_H

#include <stddef.h>

/* The longest limit a job may have, seconds: a year, past any job's. */
#define TIMELIMIT_MAX_S (365 * 86400.0)

/* Parses Slurm's forms, MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS,
 * DAYS-HOURS, DAYS-HOURS:MINUTES, DAYS-HOURS:MINUTES:SECONDS (whole
 * numbers; a field after the first below 60, hours after days below 24),
 * or a number with a unit, 90s, 30m, 1.5h, 2d, into *seconds: whole, 1 up
 * to TIMELIMIT_MAX_S. -1 when text is none of these. */
int timelimit_parse(const char *text, double *seconds);

/* seconds, rounded to whole ones, as M:SS, H:MM:SS or D-HH:MM:SS, which
 * timelimit_parse() reads back ("10:00" is ten minutes). */
void timelimit_format(double seconds, char *out, size_t outlen);

#endif
