/* fuzz_pdef.c -- fuzz target (fuzz.h) of DIPP's pipeline-definition
 * decoder (pdef.h), which reads what comes up the link and out of a slot:
 * what it accepts is a definition in range that a ground tool can show
 * and write back (the printed YAML reads back to the same definition)
 * and that encodes again within the parameter's 188 bytes. Seeds:
 * seeds/pdef/, encoded definitions.
 */
#include "fuzz.h"

#include "pdef.h"
#include "runner.h"

#include <math.h>
#include <string.h>

FUZZ_TOKENS("\x00\x01\x18\x60\x61\x62\x80\x81\x82\xa1\xa2\xf9"
                           "\xfa\xfb\x28\xb5\x2f\xfd");

static void check_fields(const pdef *d) {
    FUZZ_CHECK(d->id >= 1 && d->id <= PDEF_PIPELINES, "a pipeline out of range");
    FUZZ_CHECK(d->count >= 1 && d->count <= PDEF_MAX_STEPS,
               "a step count out of range");
    for (uint32_t k = 0; k < d->count; k++) {
        const pdef_step *s = &d->step[k];
        FUZZ_CHECK(runner_name_ok(s->name), "a module name against its rule");
        FUZZ_CHECK(s->config <= PDEF_CONFIGS, "a configuration slot out of range");
        for (uint32_t j = 0; j < s->params.count; j++) {
            const dipp_param *v = &s->params.item[j];
            FUZZ_CHECK(v->name[0], "an empty parameter name");
            FUZZ_CHECK(v->type != DIPP_PARAM_FLOAT || isfinite(v->f),
                       "a float not finite");
        }
    }
}

/* d printed as YAML and read back. */
static void check_read_back(const pdef *d) {
    static char text[16384];
    char err[256];
    FILE *f = fmemopen(text, sizeof(text), "w");
    FUZZ_CHECK(f, "fmemopen");
    pdef_print_yaml(d, f);
    long len = ftell(f);
    fclose(f);
    pdef back;
    int rc = pdef_from_yaml("printed.yaml", text, (size_t)len, &back, err,
                            sizeof(err));
    if (rc != 0) fprintf(stderr, "%s\n%.*s", err, (int)len, text);
    FUZZ_CHECK(rc == 0, "printed YAML that does not read back");
    FUZZ_CHECK(memcmp(&back, d, sizeof(back)) == 0,
               "printed YAML that reads back otherwise");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    pdef d, again;
    uint8_t out[PDEF_MAX_BYTES];
    char err[256];
    if (pdef_decode(data, size, &d, err, sizeof(err)) != 0) {
        FUZZ_CHECK(err[0], "a refusal without a message");
        return 0;
    }
    check_fields(&d);
    check_read_back(&d);
    int n = pdef_encode(&d, out, err, sizeof(err));
    FUZZ_CHECK(n > 0 && pdef_decode(out, (size_t)n, &again, err,
                                    sizeof(err)) == 0 &&
                   memcmp(&again, &d, sizeof(d)) == 0,
               "a definition that does not encode again");
    return 0;
}
