/* xml_text.h -- text written into an XML (SVG) document, escaped. Names
 * drawn in the SVGs (workloads, users, handlers, policies) come from
 * users' files, so each is written through this. */
#ifndef AEGIS_XML_TEXT_H
#define AEGIS_XML_TEXT_H

#include <stdio.h>

/* Writes text (NULL: nothing) to out with &, <, >, " and ' escaped, fit
 * for element content and for a quoted attribute alike. */
void xml_text(FILE *out, const char *text);

#endif
