/* client_json.c -- text from outside aegis (a file name, a user name) as a
 * JSON string. Apart from client.c, in the aegis_client library, so that
 * the libraries that build a listing's JSON (feed_json.c) and their unit
 * tests take it without the rest of the CLI.
 */
#include "client.h"

#include "text_safe.h"

#include <stdlib.h>
#include <string.h>

json_t *client_json_text(const char *text) {
    size_t size = strlen(text) + 1; /* text_as_utf8() makes none longer */
    char *utf8 = malloc(size);
    if (!utf8) return NULL;
    text_as_utf8(utf8, size, text);
    json_t *s = json_string(utf8);
    free(utf8);
    return s;
}
