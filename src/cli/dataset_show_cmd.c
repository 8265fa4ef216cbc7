/* dataset_show_cmd.c -- `aegis dataset ls` and `aegis dataset show`: the
 * caller's datasets read from their logs (no watcher or daemon needed). */
#include "cli.h"
#include "client.h"
#include "dataset_cmd.h"

#include "dataset.h"
#include "dataset_info.h"
#include "keylog.h"
#include "text_safe.h"

#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHOW_BAD_TEXT 20 /* bad records listed by show without --json */

static const char ls_help[] =
"usage: aegis dataset ls [--json]\n"
"\n"
"Lists your datasets: name, format, samples, files, bad records, size of\n"
"the samples (and the limit), folder. A dataset whose logs cannot be read\n"
"is said on stderr, and left out.\n"
"\n"
"  --json  one JSON array, an object a dataset: name, dir, format,\n"
"          samples, files, bad, bytes (of the samples), max_bytes (0: no\n"
"          limit)\n"
"  --help  this text\n"
"\n"
"Exit status: 0 success, 1 failure (a dataset's logs or the state\n"
"folder cannot be read; the others are listed), 2 bad usage.\n";

static const char show_help[] =
"usage: aegis dataset show NAME|PATH [--json]\n"
"\n"
"Everything about dataset NAME: its configuration, what is registered,\n"
"and each bad record skipped (file, byte offset, why; the first 20\n"
"without --json). A dataset another user shared with you is named by\n"
"the path of its state folder (.../datasets/NAME).\n"
"\n"
"  --json  one JSON object: ls's fields, and pattern, classes,\n"
"          record_size and label_size (binary), and bad_records, every\n"
"          one: file, offset, reason (a byte of a file's name that\n"
"          is not UTF-8 as '?', in text too)\n"
"  --help  this text\n"
"\n"
"Exit status: 0 success, 1 failure (its logs cannot be read, or are\n"
"damaged: the error names the file and byte), 2 bad usage, or NAME is\n"
"no dataset of yours.\n";

static json_t *summary_json(const pl_dataset *ds) {
    const pl_dsconf *c = pl_dataset_conf(ds);
    return json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I}", "name",
                     c->name, "dir", c->dir, "format",
                     pl_format_name(c->format), "samples",
                     (json_int_t)pl_dataset_count(ds), "files",
                     (json_int_t)pl_dataset_file_count(ds), "bad",
                     (json_int_t)pl_dataset_bad_count(ds), "bytes",
                     (json_int_t)pl_dataset_sample_bytes(ds), "max_bytes",
                     (json_int_t)c->max_bytes);
}

/* A dataset's configuration and file names are its owner's text, and
 * show reads another user's shared dataset: printed as text_safe shows
 * them (dir and pattern up to PATH_MAX). */
static const char *safe(char *buf, size_t size, const char *text) {
    text_safe(buf, size, text);
    return buf;
}

static void print_row(const pl_dataset *ds) {
    const pl_dsconf *c = pl_dataset_conf(ds);
    char limit[32] = "", name[256], dir[4200];
    if (c->max_bytes)
        snprintf(limit, sizeof(limit), "/%.0fM", c->max_bytes / 1048576.0);
    printf("%-20s %-7s %10llu %6u %6llu %9.1fM%-8s %s\n",
           safe(name, sizeof(name), c->name),
           pl_format_name(c->format), (unsigned long long)pl_dataset_count(ds),
           pl_dataset_file_count(ds),
           (unsigned long long)pl_dataset_bad_count(ds),
           pl_dataset_sample_bytes(ds) / 1048576.0, limit,
           safe(dir, sizeof(dir), c->dir));
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names under <state>/datasets, sorted; NULL and 0 when none. */
static char **dataset_names(const char *state, size_t *count) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/datasets", state);
    DIR *d = opendir(path);
    char **names = NULL;
    *count = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        char **grown = e->d_name[0] == '.' ? NULL
                       : realloc(names, (*count + 1) * sizeof(*names));
        if (grown && (grown[*count] = strdup(e->d_name))) {
            names = grown;
            (*count)++;
        } else if (grown) {
            names = grown;
        }
    }
    if (d)
        closedir(d);
    if (names)
        qsort(names, *count, sizeof(*names), by_name);
    return names;
}

static int list(const char *state, int json) {
    size_t count;
    char **names = dataset_names(state, &count);
    json_t *rows = json_array();
    int rc = CLI_OK;
    if (!json)
        printf("%-20s %-7s %10s %6s %6s %18s %s\n", "NAME", "FORMAT",
               "SAMPLES", "FILES", "BAD", "SIZE/LIMIT", "DIR");
    for (size_t i = 0; i < count; i++) {
        pl_dataset *ds;
        char err[512];
        if (pl_dataset_open(state, names[i], &ds, err, sizeof(err)) < 0) {
            char said[sizeof(err)]; /* it names the folder: any bytes */
            fprintf(stderr, "aegis dataset ls: %s\n",
                    safe(said, sizeof(said), err));
            rc = CLI_FAIL;
        } else {
            if (json)
                json_array_append_new(rows, summary_json(ds));
            else
                print_row(ds);
            pl_dataset_close(ds);
        }
        free(names[i]);
    }
    free(names);
    if (json) client_print_json_as(rows, JSON_INDENT(2));
    json_decref(rows);
    return rc;
}

/* A bad record's row. Its file's name is whatever the folder's writers
 * named it: a byte that starts no UTF-8 character is '?' here
 * (client_json_text()), as one left the row out of --json. */
static json_t *bad_json(const pl_dataset *ds, const pl_bad *b) {
    return json_pack("{s:o, s:I, s:s}", "file",
                     client_json_text(pl_dataset_file_name(ds, b->file)),
                     "offset", (json_int_t)b->offset, "reason",
                     pl_bad_reason_text(b->reason));
}

static void show_json(const pl_dataset *ds) {
    const pl_dsconf *c = pl_dataset_conf(ds);
    json_t *doc = summary_json(ds), *bads = json_array();
    for (uint64_t i = 0; i < pl_dataset_bad_count(ds); i++)
        json_array_append_new(bads, bad_json(ds, &pl_dataset_bad(ds)[i]));
    json_object_set_new(doc, "bad_records", bads);
    json_object_set_new(doc, "pattern", json_string(c->pattern));
    json_object_set_new(doc, "classes", json_integer(c->classes));
    if (c->format == PL_FORMAT_BINARY) {
        json_object_set_new(doc, "record_size", json_integer(c->record_size));
        json_object_set_new(doc, "label_size", json_integer(c->label_size));
    }
    client_print_json_as(doc, JSON_INDENT(2));
    json_decref(doc);
}

static void show_text(const pl_dataset *ds) {
    const pl_dsconf *c = pl_dataset_conf(ds);
    uint64_t nbad = pl_dataset_bad_count(ds);
    char name[256], dir[4200], pattern[4200], file[4200];
    printf("dataset  %s\nfolder   %s (files %s)\nformat   %s",
           safe(name, sizeof(name), c->name), safe(dir, sizeof(dir), c->dir),
           safe(pattern, sizeof(pattern), c->pattern),
           pl_format_name(c->format));
    if (c->format == PL_FORMAT_BINARY)
        printf(", %u-byte records, %u-byte labels", c->record_size,
               c->label_size);
    printf("\nsamples  %llu in %u files, %.1f MiB",
           (unsigned long long)pl_dataset_count(ds), pl_dataset_file_count(ds),
           pl_dataset_sample_bytes(ds) / 1048576.0);
    if (c->max_bytes)
        printf(" of at most %.1f MiB", c->max_bytes / 1048576.0);
    printf("\nbad      %llu\n", (unsigned long long)nbad);
    for (uint64_t i = 0; i < nbad && i < SHOW_BAD_TEXT; i++) {
        const pl_bad *b = &pl_dataset_bad(ds)[i];
        printf("  %s at byte %llu: %s\n",
               safe(file, sizeof(file), pl_dataset_file_name(ds, b->file)),
               (unsigned long long)b->offset, pl_bad_reason_text(b->reason));
    }
    if (nbad > SHOW_BAD_TEXT)
        printf("  ... and %llu more (--json lists them all)\n",
               (unsigned long long)(nbad - SHOW_BAD_TEXT));
}

static int state_or_fail(const char *cmd, char *state, size_t size) {
    if (pl_state_dir(state, size))
        return 0;
    fprintf(stderr, "aegis dataset %s: no state folder ($AEGIS_STATE_HOME, "
            "$XDG_STATE_HOME or $HOME)\n", cmd);
    return -1;
}

/* STATE/datasets/NAME (a trailing '/' allowed) into STATE and NAME. */
static int split_path(const char *path, char *state, size_t size,
                      const char **name) {
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        len--;
    if (len >= size)
        return -1;
    memcpy(state, path, len);
    state[len] = '\0';
    char *slash = strrchr(state, '/');
    if (!slash || slash == state)
        return -1;
    *slash = '\0';
    *name = slash + 1; /* in the buffer, after the NUL ending STATE */
    char *parent = strrchr(state, '/');
    if (!parent || strcmp(parent, "/datasets") != 0)
        return -1;
    *parent = '\0';
    return 0;
}

int cli_dataset_ls(int argc, char **argv) {
    int json = argc == 2 && strcmp(argv[1], "--json") == 0;
    char state[4096];
    if (argc == 2 && strcmp(argv[1], "--help") == 0) {
        fputs(ls_help, stdout);
        return CLI_OK;
    }
    if (argc > 2 || (argc == 2 && !json)) {
        fputs(ls_help, stderr);
        return CLI_USAGE;
    }
    return state_or_fail("ls", state, sizeof(state)) < 0 ? CLI_FAIL
                                                          : list(state, json);
}

int cli_dataset_show(int argc, char **argv) {
    int json = argc == 3 && strcmp(argv[2], "--json") == 0;
    char state[4096], err[512];
    if (argc == 2 && strcmp(argv[1], "--help") == 0) {
        fputs(show_help, stdout);
        return CLI_OK;
    }
    if (argc < 2 || argc > 3 || (argc == 3 && !json)) {
        fputs(show_help, stderr);
        return CLI_USAGE;
    }
    const char *name = argv[1];
    if (strchr(name, '/')) {
        if (split_path(name, state, sizeof(state), &name) < 0) {
            fprintf(stderr, "aegis dataset show: PATH: '%s' is not "
                    "STATE/datasets/NAME\n", argv[1]);
            return CLI_USAGE;
        }
    } else if (state_or_fail("show", state, sizeof(state)) < 0) {
        return CLI_FAIL;
    }
    pl_dataset *ds;
    char dsdir[4200];
    int rc = dataset_known("show", state, name, dsdir, sizeof(dsdir));
    if (rc != CLI_OK)
        return rc;
    if (pl_dataset_open(state, name, &ds, err, sizeof(err)) < 0) {
        char said[sizeof(err)]; /* it may quote the owner's files */
        fprintf(stderr, "aegis dataset show: %s\n",
                safe(said, sizeof(said), err));
        return CLI_FAIL;
    }
    if (json)
        show_json(ds);
    else
        show_text(ds);
    pl_dataset_close(ds);
    return CLI_OK;
}
