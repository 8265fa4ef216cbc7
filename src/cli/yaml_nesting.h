/* yaml_nesting.h -- how deep a YAML text nests, checked before it is
 * loaded (yaml_nesting.c). */
#ifndef AEGIS_YAML_NESTING_H
#define AEGIS_YAML_NESTING_H

#include <stddef.h>

/* Whether the lists and mappings of the YAML text buf (len bytes) nest at
 * most max deep: 0, or -1 with "PATH:LINE: why" in err, why being the
 * depth or, where buf is not YAML, libyaml's problem. */
int yaml_nesting_check(const char *path, const unsigned char *buf, size_t len,
                       int max, char *err, size_t errlen);

#endif
