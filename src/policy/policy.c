/* policy.c -- the table of policies, generated from POLICY_LIST so the
 * names for --help and the lookup can never disagree. */
#include "policy.h"

#include <stddef.h>
#include <string.h>

#define POLICY_ENTRY(str, sym) &sym,
static const policy *const policy_table[] = {POLICY_LIST(POLICY_ENTRY) NULL};
#undef POLICY_ENTRY

#define POLICY_NAME(str, sym) str,
static const char *const policy_names[] = {POLICY_LIST(POLICY_NAME) NULL};
#undef POLICY_NAME

const char *const *core_policy_names(void) { return policy_names; }

const policy *policy_find(const char *name) {
    for (int i = 0; name && policy_table[i]; i++)
        if (strcmp(policy_table[i]->name, name) == 0) return policy_table[i];
    return NULL;
}
