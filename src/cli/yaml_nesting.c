/* yaml_nesting.c -- the nesting of a YAML text, read from libyaml's events
 * (yaml_nesting.h).
 *
 * Loading checks depth too late: yaml_parser_load() builds the whole
 * document first, and libyaml's scanner checks every pending flow level
 * on each token, so time grows with the square of the depth (100,000
 * nested [ in a 100 KB file took 77 s). Events come one at a time, so
 * the check stops at the first level too deep, before any node is built.
 * Used by job specs and pipeline files.
 */
#include "yaml_nesting.h"

#include <stdio.h>
#include <yaml.h>

int yaml_nesting_check(const char *path, const unsigned char *buf, size_t len,
                       int max, char *err, size_t errlen) {
    yaml_parser_t parser;
    yaml_event_t ev;
    int depth = 0, rc = 1;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, buf, len);
    while (rc > 0) {
        if (!yaml_parser_parse(&parser, &ev)) {
            snprintf(err, errlen, "%s:%d: %s", path,
                     (int)parser.problem_mark.line + 1,
                     parser.problem ? parser.problem : "not YAML");
            rc = -1;
            break;
        }
        if (ev.type == YAML_SEQUENCE_START_EVENT ||
            ev.type == YAML_MAPPING_START_EVENT)
            depth++;
        else if (ev.type == YAML_SEQUENCE_END_EVENT ||
                 ev.type == YAML_MAPPING_END_EVENT)
            depth--;
        if (depth > max) {
            snprintf(err, errlen, "%s:%d: lists and mappings nested more "
                     "than %d deep", path, (int)ev.start_mark.line + 1, max);
            rc = -1;
        } else if (ev.type == YAML_STREAM_END_EVENT) {
            rc = 0;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    return rc;
}
