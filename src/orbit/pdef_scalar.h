/* pdef_scalar.h -- the type and value of an unquoted YAML scalar given as
 * a pipeline parameter (pdef_scalar.c), read as YAML 1.2's core schema
 * reads it. */
#ifndef DIPP_PDEF_SCALAR_H
#define DIPP_PDEF_SCALAR_H

#include <stddef.h>

#include "dipp_module.h"

/* Sets v->type (DIPP_PARAM_INT with v->i, DIPP_PARAM_FLOAT with v->f, or
 * DIPP_PARAM_STR: the caller copies s) and returns 0; or returns -1 with
 * why (a sentence saying how to write it) for a scalar that is no number
 * or string, or that YAML 1.1 and 1.2 read differently. */
int pdef_scalar(const char *s, dipp_param *v, char *why, size_t cap);

#endif
