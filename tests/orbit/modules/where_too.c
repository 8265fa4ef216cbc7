/* where_too.c -- test module: where.c by another name. */
#define WHERE_NAME "where_too"
#include "where.c"
