/* faultfs.h -- a power-cut fault layer for tests: an in-memory file system
 * under platform.h's file operations that keeps, for every file and name,
 * what is synced apart from what is only written. A cut, at a chosen
 * step, stops every later operation (-EIO) and drops everything not yet
 * synced, as losing power does: a file's bytes survive only after its
 * fsync, a created, renamed or removed name only after its folder's. */
#ifndef DIPP_FAULTFS_H
#define DIPP_FAULTFS_H

#include <stdint.h>

/* Installs the layer (empty) through plat_fs_use. */
void faultfs_install(void);
void faultfs_uninstall(void);
/* Cuts the power as step n starts (1 is the next); 0 never. */
void faultfs_cut_at(uint64_t n);
/* Steps taken since the last power-up; whether the power is off. */
uint64_t faultfs_steps(void);
int faultfs_off(void);
/* Powers up again: what was not synced is gone. */
void faultfs_power_up(void);

#endif
