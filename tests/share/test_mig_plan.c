/* test_mig_plan.c -- the MIG profile table (mig_profiles.h) and the planner
 * and auto rule (mig_plan.h): exact picks per GPU model, fragmentation,
 * full GPUs, and the MIG-or-MPS choice. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "mig_plan.h"
#include "share_mode.h"

static const mig_model *model(const char *nvml_name) {
    const mig_model *m = mig_model_find(nvml_name);
    if (!m)
        fail_msg("no MIG model for \"%s\"", nvml_name);
    return m;
}

/* Every NVML name of the four GPUs finds its model; others find none. */
static void test_lookup_by_nvml_name(void **state) {
    assert_string_equal(model("NVIDIA A100-SXM4-40GB")->name, "A100-40GB");
    assert_string_equal(model("NVIDIA A100-PCIE-40GB")->name, "A100-40GB");
    assert_string_equal(model("NVIDIA A100-SXM4-80GB")->name, "A100-80GB");
    assert_string_equal(model("NVIDIA A100 80GB PCIe")->name, "A100-80GB");
    assert_string_equal(model("NVIDIA H100 80GB HBM3")->name, "H100-80GB");
    assert_string_equal(model("NVIDIA H100 PCIe")->name, "H100-80GB");
    assert_string_equal(model("NVIDIA H200")->name, "H200-141GB");
    assert_null(mig_model_find("NVIDIA H100 NVL"));
    assert_null(mig_model_find("NVIDIA GeForce RTX 4090"));
    assert_null(mig_model_find("aegis test GPU"));
    assert_null(mig_model_find(NULL));
}

/* The table's invariants on every model: smallest first, starts inside the
 * 8 slots and aligned so the profile fits, room for max_instances. */
static void test_table_geometry(void **state) {
    const char *names[] = {"A100-SXM4-40GB", "A100-SXM4-80GB",
                           "H100 80GB HBM3", "H200"};
    for (int k = 0; k < 4; k++) {
        const mig_model *m = model(names[k]);
        assert_int_equal(m->nprofiles, 6);
        for (int i = 0; i < m->nprofiles; i++) {
            const mig_profile *p = &m->profiles[i];
            int nstarts = 0;
            for (int s = 0; s < MIG_MEM_SLICES; s++)
                if (p->starts >> s & 1u) {
                    assert_true(s + p->mem_slices <= MIG_MEM_SLICES);
                    nstarts++;
                }
            assert_true(nstarts >= p->max_instances);
            assert_true(p->mem_mib <= m->total_mib);
            assert_ptr_equal(mig_profile_find(m, p->name), p);
            assert_ptr_equal(mig_profile_by_nvml(m, p->nvml_profile), p);
            if (i > 0)
                assert_true(m->profiles[i - 1].mem_mib <= p->mem_mib);
        }
    }
    const mig_model *a = model("NVIDIA A100-SXM4-40GB");
    assert_int_equal(mig_profile_find(a, "3g.20gb")->nvml_profile,
                     MIG_NVML_3_SLICE);
    assert_int_equal(mig_profile_find(a, "1g.10gb")->nvml_profile,
                     MIG_NVML_1_SLICE_REV2);
    assert_int_equal(mig_profile_find(a, "3g.20gb")->mem_slices, 4);
    assert_null(mig_profile_find(a, "1g.5gb+me"));
}

static void expect(const mig_model *m, const mig_instance *have, int n,
                   long demand, mig_verdict v, const char *profile,
                   int start) {
    mig_pick p = mig_plan(m, have, n, demand);
    if (p.verdict != v)
        fail_msg("%s, %ld MiB: %s, want %s", m->name, demand,
                 mig_verdict_name(p.verdict), mig_verdict_name(v));
    if (profile)
        assert_string_equal(p.profile->name, profile);
    else
        assert_null(p.profile);
    if (v == MIG_PLACED)
        assert_int_equal(p.start, start);
}

/* On an empty GPU: the smallest profile whose memory (as NVML reports it,
 * below the nominal name) holds the demand, at slot 0. */
static void test_picks_empty_gpu(void **state) {
    const mig_model *a40 = model("NVIDIA A100-SXM4-40GB");
    expect(a40, NULL, 0, 4000, MIG_PLACED, "1g.5gb", 0);
    expect(a40, NULL, 0, 4864, MIG_PLACED, "1g.5gb", 0);
    expect(a40, NULL, 0, 5000, MIG_PLACED, "1g.10gb", 0);
    expect(a40, NULL, 0, 12000, MIG_PLACED, "3g.20gb", 0);
    expect(a40, NULL, 0, 20000, MIG_PLACED, "7g.40gb", 0);
    expect(a40, NULL, 0, 41000, MIG_TOO_BIG, NULL, -1);

    const mig_model *a80 = model("NVIDIA A100-SXM4-80GB");
    expect(a80, NULL, 0, 9000, MIG_PLACED, "1g.10gb", 0);
    expect(a80, NULL, 0, 9800, MIG_PLACED, "1g.20gb", 0);
    expect(a80, NULL, 0, 30000, MIG_PLACED, "3g.40gb", 0);
    expect(a80, NULL, 0, 70000, MIG_PLACED, "7g.80gb", 0);

    const mig_model *h100 = model("NVIDIA H100 80GB HBM3");
    expect(h100, NULL, 0, 9984, MIG_PLACED, "1g.10gb", 0);
    expect(h100, NULL, 0, 10000, MIG_PLACED, "1g.20gb", 0);
    expect(h100, NULL, 0, 40448, MIG_PLACED, "3g.40gb", 0);
    expect(h100, NULL, 0, 81153, MIG_TOO_BIG, NULL, -1);

    const mig_model *h200 = model("NVIDIA H200");
    expect(h200, NULL, 0, 16000, MIG_PLACED, "1g.18gb", 0);
    expect(h200, NULL, 0, 20000, MIG_PLACED, "1g.35gb", 0);
    expect(h200, NULL, 0, 50000, MIG_PLACED, "3g.71gb", 0);
    expect(h200, NULL, 0, 100000, MIG_PLACED, "7g.141gb", 0);
    expect(h200, NULL, 0, 150000, MIG_TOO_BIG, NULL, -1);
}

/* Filling a GPU one job at a time takes the lowest free start each time,
 * then says FULL: seven 1g.5gb use all 7 compute slices. */
static void test_fill_in_order(void **state) {
    const mig_model *m = model("NVIDIA A100-SXM4-40GB");
    mig_instance have[8];
    for (int i = 0; i < 7; i++) {
        expect(m, have, i, 4000, MIG_PLACED, "1g.5gb", i);
        have[i] = (mig_instance){mig_profile_find(m, "1g.5gb"), i};
    }
    expect(m, have, 7, 4000, MIG_FULL, "1g.5gb", -1);
}

/* 1g.10gb (two memory slices) goes at 0, 2, 4, 6; a fifth would pass its
 * limit of 4 and find no memory anyway. */
static void test_double_memory_1g(void **state) {
    const mig_model *m = model("NVIDIA A100-SXM4-40GB");
    const mig_profile *p = mig_profile_find(m, "1g.10gb");
    mig_instance have[4];
    for (int i = 0; i < 4; i++) {
        expect(m, have, i, 9000, MIG_PLACED, "1g.10gb", 2 * i);
        have[i] = (mig_instance){p, 2 * i};
    }
    expect(m, have, 4, 9000, MIG_FULL, "1g.10gb", -1);
}

/* Two 1g.5gb at slots 1 and 5 leave 6 memory and 5 compute slices free,
 * enough for a 3g.20gb, but both of its starts (0, 4) are cut: FRAGMENTED,
 * naming the profile a repartition would create. A small job still fits. */
static void test_fragmented(void **state) {
    const mig_model *m = model("NVIDIA A100-SXM4-40GB");
    const mig_profile *small = mig_profile_find(m, "1g.5gb");
    mig_instance have[] = {{small, 1}, {small, 5}};
    expect(m, have, 2, 12000, MIG_FRAGMENTED, "3g.20gb", -1);
    expect(m, have, 2, 4000, MIG_PLACED, "1g.5gb", 0);
    expect(m, have, 2, 9000, MIG_PLACED, "1g.10gb", 2);
    /* 2g.10gb at 2 and 1g.5gb at 6 then leave slot 0, 4, 7: three free
     * memory slices, none two wide at a valid start. */
    mig_instance more[] = {{small, 1}, {small, 5},
                           {mig_profile_find(m, "2g.10gb"), 2},
                           {small, 6}};
    expect(m, more, 4, 9000, MIG_FRAGMENTED, "1g.10gb", -1);
}

/* Not fragmentation: the slices are gone. Two 3g.20gb take all memory. */
static void test_full_is_not_fragmented(void **state) {
    const mig_model *m = model("NVIDIA H100 80GB HBM3");
    const mig_profile *p = mig_profile_find(m, "3g.40gb");
    mig_instance have[] = {{p, 0}, {p, 4}};
    expect(m, have, 2, 5000, MIG_FULL, "1g.10gb", -1);
    /* A 4g.40gb at 0 leaves the upper half to a 3g.40gb only. */
    mig_instance half[] = {{mig_profile_find(m, "4g.40gb"), 0}};
    expect(m, half, 1, 30000, MIG_PLACED, "3g.40gb", 4);
    expect(m, half, 1, 50000, MIG_FULL, "7g.80gb", -1);
}

/* auto: MIG when the profile is at most 1.5x the demand, else MPS. */
static void test_auto(void **state) {
    const mig_model *a40 = model("NVIDIA A100-SXM4-40GB");
    double w = MIG_AUTO_MAX_WASTE;
    assert_int_equal(mig_auto(a40, 4000, w), MIG_MODE_MIG);   /* 1.22x */
    assert_int_equal(mig_auto(a40, 6000, w), MIG_MODE_MPS);   /* 1.64x */
    assert_int_equal(mig_auto(a40, 8000, w), MIG_MODE_MIG);   /* 1.23x */
    assert_int_equal(mig_auto(a40, 13000, w), MIG_MODE_MPS);  /* 1.54x */
    assert_int_equal(mig_auto(a40, 15000, w), MIG_MODE_MIG);  /* 1.33x */
    assert_int_equal(mig_auto(a40, 41000, w), MIG_MODE_MPS);  /* too big */
    assert_int_equal(mig_auto(a40, 0, w), MIG_MODE_MPS);
    assert_int_equal(mig_auto(a40, 6000, 2.0), MIG_MODE_MIG);
    const mig_model *h200 = model("NVIDIA H200");
    assert_int_equal(mig_auto(h200, 12000, w), MIG_MODE_MIG); /* 1.37x */
    assert_int_equal(mig_auto(h200, 10000, w), MIG_MODE_MPS); /* 1.64x */
}

/* An instance found running fits only at a valid start whose memory
 * slices are free; 4g + 3g (all 7 compute slices) is a valid layout. */
static void test_fits(void **state) {
    (void)state;
    const mig_model *m = model("NVIDIA A100-SXM4-40GB");
    const mig_profile *small = mig_profile_find(m, "1g.5gb");
    const mig_profile *big = mig_profile_find(m, "3g.20gb");
    mig_instance have[] = {{small, 1}, {small, 5}};
    assert_true(mig_fits(have, 2, (mig_instance){small, 0}));
    assert_false(mig_fits(have, 2, (mig_instance){small, 1}));  /* taken */
    assert_false(mig_fits(have, 2, (mig_instance){big, 4}));    /* overlaps */
    assert_false(mig_fits(have, 2, (mig_instance){big, 2}));    /* no start */
    assert_false(mig_fits(have, 0, (mig_instance){small, 7}));  /* no start */
    assert_false(mig_fits(have, 0, (mig_instance){small, -1}));
    mig_instance threes[] = {{big, 0}};
    assert_true(mig_fits(threes, 1, (mig_instance){big, 4}));
    mig_instance fours[] = {{mig_profile_find(m, "4g.20gb"), 0}};
    assert_true(mig_fits(fours, 1, (mig_instance){big, 4}));
    assert_false(mig_fits(fours, 1, (mig_instance){small, 3}));
}

/* Every mode's name parses back to it; unknown names are refused. */
static void test_share_mode_names(void **state) {
    (void)state;
    for (int m = 0; m < SHARE_NMODES; m++)
        assert_int_equal(share_mode_parse(share_mode_name((share_mode)m)), m);
    assert_int_equal(share_mode_parse("mps"), SHARE_MPS);
    assert_int_equal(share_mode_parse("MPS"), -1);
    assert_int_equal(share_mode_parse(""), -1);
    assert_string_equal(share_mode_name(SHARE_NMODES), "?");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup_by_nvml_name),
        cmocka_unit_test(test_table_geometry),
        cmocka_unit_test(test_picks_empty_gpu),
        cmocka_unit_test(test_fill_in_order),
        cmocka_unit_test(test_double_memory_1g),
        cmocka_unit_test(test_fragmented),
        cmocka_unit_test(test_full_is_not_fragmented),
        cmocka_unit_test(test_auto),
        cmocka_unit_test(test_fits),
        cmocka_unit_test(test_share_mode_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
