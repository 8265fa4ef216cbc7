/* trainset_writer.h -- writing a training set (trainset.h's layout) item
 * by item, so a selection that chooses keys in order streams them to the
 * file without holding the set in memory. pl_trainset_write is this with
 * an array.
 *
 * The header's count is only known at the end: it is written then, and
 * the checksum is combined from the header's and the items' parts.
 */
#ifndef AEGIS_PL_TRAINSET_WRITER_H
#define AEGIS_PL_TRAINSET_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "trainset.h"

typedef struct pl_trainset_writer pl_trainset_writer;

/* Starts PATH's temporary file. NULL with err naming the file. */
pl_trainset_writer *pl_trainset_begin(const char *path, char *err,
                                      size_t errlen);
/* Appends one item (buffered). 0, or -1 with err. */
int pl_trainset_add(pl_trainset_writer *w, uint64_t key, float weight,
                    char *err, size_t errlen);
/* Writes the header and checksum, fsyncs and renames the file into place,
 * and frees w. 0, or -1 with err (the temporary file is removed). */
int pl_trainset_finish(pl_trainset_writer *w, uint64_t seed, uint32_t trigger,
                       char *err, size_t errlen);
/* Drops an unfinished set: removes its temporary file and frees w. */
void pl_trainset_abort(pl_trainset_writer *w);

#endif
