/* request_words.h -- aegisd's refusals of a request, said in the words
 * the user typed (request_words.c). */
#ifndef AEGIS_REQUEST_WORDS_H
#define AEGIS_REQUEST_WORDS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* A field of a request and what the user typed to give it. */
typedef struct request_word {
    const char *field;  /* as aegisd names it: "mem_mib" */
    const char *typed;  /* as the user gave it: "--gpu-mem", a spec's "mem" */
} request_word;

/* How a command's request was typed. aegisd names what it refuses by the
 * request's own path, "jobs[2].name: ..." or "drain.reason: ...". */
typedef struct request_words {
    const char *object;        /* the path's first word: "jobs", "drain" */
    const request_word *words; /* ended by {NULL, NULL} */
    const request_word *also;  /* looked in after words, or NULL: what
                                  options gave beside a file */
    const char *file;          /* the file the jobs were read from (a spec,
                                  an --array file), or NULL: typed */
    json_t *lines;             /* the line each job starts on in file, an
                                  array of integers, or NULL; not owned */
    json_t *given;             /* the fields each job's entry in file
                                  gives, an array of objects keyed by
                                  field, or NULL; not owned. A field an
                                  entry does not give came from an option
                                  (also) */
    bool several;              /* "jobs" holds more than one: say which */
} request_words;

/* For "jobs": the submit command's options, the keys of aegis's spec
 * format, and those of AEGIS's (version: 1, which gives the rest as
 * options). */
extern const request_word request_words_submit_options[];
extern const request_word request_words_spec_keys[];
extern const request_word request_words_aegis_spec_keys[];

/* Which job of w's request index is, as the start of a message:
 * "spec.yaml: job 2 (line 7): ", "spec.yaml: ", "job 2: ", or "" for the
 * only job typed; into buf, returned. */
const char *request_words_job(const request_words *w, long index, char *buf,
                              size_t len);

/* err said in w's words into buf ("--name: ...", "spec.yaml: job 2 (line
 * 7): name: ..."), and buf returned; err itself where its path is not one
 * w knows, or buf is too small. */
const char *request_words_say(const request_words *w, const char *err,
                              char *buf, size_t len);

#endif
