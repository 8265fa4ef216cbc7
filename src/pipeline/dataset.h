/* dataset.h -- reading a registered dataset: its samples in key order,
 * each sample's bytes (memory-mapped, not copied) and numeric features.
 *
 * A dataset lives in its owner's aegis state folder (pl_state_dir):
 *   <state>/datasets/<name>/dataset.json  what `aegis dataset add` was told
 *   <state>/datasets/<name>/keys.log      the append-only key log
 *   <state>/datasets/<name>/files.log     the file table
 * The watcher (watch.h) appends; any number of readers open it.
 */
#ifndef AEGIS_PL_DATASET_H
#define AEGIS_PL_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "sample.h"

typedef struct pl_dataset pl_dataset;

/* The caller's aegis state folder: $AEGIS_STATE_HOME, else
 * $XDG_STATE_HOME/aegis, else $HOME/.local/state/aegis. Returns buf, or
 * NULL when none of them is set or it does not fit. */
char *pl_state_dir(char *buf, size_t size);

/* Opens dataset NAME under STATE (a folder pl_state_dir gave, or the one a
 * training job's $AEGIS_DATASET names the parent of). 0, or -1 with a
 * message naming the file in err. */
int pl_dataset_open(const char *state, const char *name, pl_dataset **out,
                    char *err, size_t errlen);
void pl_dataset_close(pl_dataset *ds);

/* Reads what was registered since the last call (or the open): 0, or -1
 * with err. Pointers from pl_dataset_samples() may move. */
int pl_dataset_refresh(pl_dataset *ds, char *err, size_t errlen);

/* The samples registered so far, count of them, sample i having key i. */
uint64_t pl_dataset_count(const pl_dataset *ds);
const pl_sample *pl_dataset_samples(const pl_dataset *ds);

/* The bytes of sample KEY, mapped from its file; valid until close.
 * NULL with err when the key is unknown or its file is gone. */
const void *pl_dataset_bytes(pl_dataset *ds, uint64_t key, size_t *len,
                             char *err, size_t errlen);

/* Sample KEY's numeric features: the float32 values of a binary record
 * after its label, or a CSV row's numeric columns other than the label
 * and timestamp. Writes at most max of them and their number to *dim.
 * 0, or -1 with err (a one-sample-per-file dataset has none). */
int pl_dataset_features(pl_dataset *ds, uint64_t key, float *out,
                        size_t max, size_t *dim, char *err, size_t errlen);

#endif
