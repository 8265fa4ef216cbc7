/* dataset_info.h -- what `aegis dataset ls|show` tell beyond dataset.h's
 * reading: the configuration, the file table and the bad records. */
#ifndef AEGIS_PL_DATASET_INFO_H
#define AEGIS_PL_DATASET_INFO_H

#include <stdint.h>

#include "dataset.h"
#include "dsconf.h"

typedef struct pl_bad {
    uint32_t file;
    uint32_t reason; /* pl_bad_reason (keylog.h) */
    uint64_t offset;
} pl_bad;

const pl_dsconf *pl_dataset_conf(const pl_dataset *ds);
uint32_t pl_dataset_file_count(const pl_dataset *ds);
/* File i's name in the dataset's folder. */
const char *pl_dataset_file_name(const pl_dataset *ds, uint32_t i);
uint64_t pl_dataset_bad_count(const pl_dataset *ds);
const pl_bad *pl_dataset_bad(const pl_dataset *ds);
/* The bytes of all samples registered. */
uint64_t pl_dataset_sample_bytes(const pl_dataset *ds);

#endif
