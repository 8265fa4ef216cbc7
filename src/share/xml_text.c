/* xml_text.c -- escaped text for XML documents (xml_text.h). */
#include "xml_text.h"

void xml_text(FILE *out, const char *text) {
    for (; text && *text; text++) {
        switch (*text) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&apos;", out); break;
        default: putc(*text, out);
        }
    }
}
