/* share.h -- letting named users read a dataset (`aegis dataset share`):
 * POSIX ACL entries for each user on the dataset's state folder and its
 * files, on its data folder and files, default entries on both folders so
 * files written later are readable too, and search (x) on the folders
 * above the state folder that the owner owns, so the user can reach it.
 * Unsharing removes the user's entries from the dataset's folders and
 * files (the search on the folders above stays: it lists nothing).
 */
#ifndef AEGIS_PL_SHARE_H
#define AEGIS_PL_SHARE_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* Grants (grant != 0) or takes back user uid's read access to dataset
 * NAME under STATE; each folder above given a search entry is said on
 * said (NULL: not said). 0, or -1 with err naming the path. */
int pl_dataset_share(const char *state, const char *name, uid_t uid,
                     int grant, FILE *said, char *err, size_t errlen);

#endif
