/* oom_text.h -- whether a failed job's output says it ran out of GPU
 * memory, from the frameworks' own messages. Pure: it reads text it is
 * given (aegisd gives it the tail of a job's stderr, read through the
 * safe reader of job_file.h, or the tail a Slurm task's lease_exit
 * carries), so aegisd and the Slurm plugin's jobs share one classifier.
 *
 * A message counts only where a framework puts it: at the start of a
 * line, after an exception's "Name: ", a logger's "] ", or as part of a
 * dotted exception name ("torch.OutOfMemoryError", "...errors_impl.
 * ResourceExhaustedError"). The same words in the middle of a sentence
 * (a help text describing --retry-on "CUDA out of memory") do not, and an
 * output holding a usage text ("usage: ..." at a line's start: the
 * command was called wrongly) is never an OOM.
 */
#ifndef AEGIS_OOM_TEXT_H
#define AEGIS_OOM_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* The framework message found in the n bytes of text (which may hold
 * NUL bytes and need not end in one), as a static string ("CUDA out of
 * memory"), or NULL when it says no OOM. */
const char *oom_text_find(const char *text, size_t n);

/* The next line of text[0..n) from *at, copied into buf (cut at its
 * size, NUL-terminated, without its newline); a NUL ends a line as a
 * newline does. false at the end. The readers of a job's output here
 * (oom_numbers.h too) go through it line by line. */
bool oom_text_line(const char *text, size_t n, size_t *at, char *buf,
                   size_t size);

#endif
