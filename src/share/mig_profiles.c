/* mig_profiles.c -- the MIG profile table (see mig_profiles.h).
 *
 * Source: NVIDIA Multi-Instance GPU User Guide, "Supported MIG Profiles"
 * (docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html):
 * profile names, compute and memory fractions, instances available, and
 * the placement diagrams (also printed by `nvidia-smi mig -lgipp`):
 *
 *   profile     NVML profile    memory slices  starts        max
 *   1g          1_SLICE         1              0..6          7
 *   1g (2x mem) 1_SLICE_REV2    2              0, 2, 4, 6    4
 *   2g          2_SLICE         2              0, 2, 4       3
 *   3g          3_SLICE         4              0, 4          2
 *   4g          4_SLICE         4              0             1
 *   7g          7_SLICE         8              0             1
 *
 * The same geometry holds on every GPU here; only memory differs. The +me
 * profiles (1_SLICE_REV1) are left out: one per GPU, and they take the
 * media engines a training job does not use.
 *
 * mem_mib is what nvidia-smi mig -lgip reports (GiB x 1024), not the
 * nominal name, since the planner must fit a job into what it really gets.
 * Drivers differ by a fraction of a GiB; where transcripts disagree the
 * smaller value is kept. Values marked "unsure" were not seen in any
 * transcript and are derived as said beside them.
 *   A100-40GB: the user guide's own -lgip listing (4.75, 9.62, 19.50,
 *              39.25 GiB).
 *   A100-80GB: published -lgip output on R5xx drivers (9.50, 19.50,
 *              39.25 GiB); 7g.80gb unsure: 78.50 GiB, from NVIDIA's
 *              go-nvml mock (memorySizeMB 80384), not a transcript.
 *   H100 80GB: published -lgip output (9.75, 19.62, 39.50, 79.25 GiB).
 *   H200:      published -lgip output for 1g.18gb (16.00), 2g.35gb
 *              (32.50) and 7g.141gb (140.00 GiB); unsure: 1g.35gb taken
 *              equal to 2g.35gb (same two memory slices, as on every other
 *              GPU here), 3g.71gb and 4g.71gb as twice 2g.35gb (65.00 GiB;
 *              the real value is likely a little higher).
 * NVML's profile numbers are nvml.h's NVML_GPU_INSTANCE_PROFILE_* values.
 */
#include <stddef.h>
#include <string.h>

#include "mig_profiles.h"

/* Start-slot masks of the geometry above. */
#define S_1G 0x7Fu      /* 0..6 */
#define S_1G2 0x55u     /* 0, 2, 4, 6 */
#define S_2G 0x15u      /* 0, 2, 4 */
#define S_3G 0x11u      /* 0, 4 */
#define S_ONE 0x01u     /* 0 */

/* One model's six profiles, smallest first, from its memory per profile. */
#define MIG_SIX(n1, m1, n1b, m1b, n2, m2, n3, m3, n4, m4, n7, m7)          \
    6, {{n1, MIG_NVML_1_SLICE, m1, 1, 1, 7, S_1G},                         \
        {n1b, MIG_NVML_1_SLICE_REV2, m1b, 1, 2, 4, S_1G2},                 \
        {n2, MIG_NVML_2_SLICE, m2, 2, 2, 3, S_2G},                         \
        {n3, MIG_NVML_3_SLICE, m3, 3, 4, 2, S_3G},                         \
        {n4, MIG_NVML_4_SLICE, m4, 4, 4, 1, S_ONE},                        \
        {n7, MIG_NVML_7_SLICE, m7, 7, 8, 1, S_ONE}}

static const mig_model mig_a100_40 = {
    "A100-40GB", 40960,
    MIG_SIX("1g.5gb", 4864, "1g.10gb", 9856, "2g.10gb", 9856,
            "3g.20gb", 19968, "4g.20gb", 19968, "7g.40gb", 40192)};

static const mig_model mig_a100_80 = {
    "A100-80GB", 81920,
    MIG_SIX("1g.10gb", 9728, "1g.20gb", 19968, "2g.20gb", 19968,
            "3g.40gb", 40192, "4g.40gb", 40192, "7g.80gb", 80384)};

static const mig_model mig_h100_80 = {
    "H100-80GB", 81920,
    MIG_SIX("1g.10gb", 9984, "1g.20gb", 20096, "2g.20gb", 20096,
            "3g.40gb", 40448, "4g.40gb", 40448, "7g.80gb", 81152)};

static const mig_model mig_h200 = {
    "H200-141GB", 144384,
    MIG_SIX("1g.18gb", 16384, "1g.35gb", 33280, "2g.35gb", 33280,
            "3g.71gb", 66560, "4g.71gb", 66560, "7g.141gb", 143360)};

/* NVML names to models: every word of `all` must be in the name. H100 NVL
 * (94 GB) and H100 96GB have other profiles and match none. H200 NVL is
 * taken to share the H200 SXM table (the guide lists both at 141GB with 7
 * instances; its per-profile rows were not checked). */
static const struct {
    const char *all[2];
    const mig_model *model;
} mig_names[] = {
    {{"A100", "40GB"}, &mig_a100_40},       /* -SXM4-40GB, -PCIE-40GB */
    {{"A100", "80GB"}, &mig_a100_80},       /* -SXM4-80GB, 80GB PCIe */
    {{"H100 80GB HBM3", NULL}, &mig_h100_80}, /* SXM5 */
    {{"H100 PCIe", NULL}, &mig_h100_80},    /* 80 GB PCIe */
    {{"H200", NULL}, &mig_h200},
};

const mig_model *mig_model_find(const char *nvml_name) {
    if (!nvml_name)
        return NULL;
    for (size_t i = 0; i < sizeof mig_names / sizeof mig_names[0]; i++) {
        int ok = 1;
        for (int w = 0; w < 2 && mig_names[i].all[w]; w++)
            ok = ok && strstr(nvml_name, mig_names[i].all[w]) != NULL;
        if (ok)
            return mig_names[i].model;
    }
    return NULL;
}

const mig_profile *mig_profile_find(const mig_model *m, const char *name) {
    for (int i = 0; i < m->nprofiles; i++)
        if (strcmp(m->profiles[i].name, name) == 0)
            return &m->profiles[i];
    return NULL;
}

const mig_profile *mig_profile_by_nvml(const mig_model *m, int nvml_profile) {
    for (int i = 0; i < m->nprofiles; i++)
        if (m->profiles[i].nvml_profile == nvml_profile)
            return &m->profiles[i];
    return NULL;
}
