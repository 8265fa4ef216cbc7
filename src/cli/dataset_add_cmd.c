/* dataset_add_cmd.c -- `aegis dataset add` and `aegis dataset rm`: a
 * dataset's state folder (<state>/datasets/NAME, dataset.h) made with its
 * dataset.json, or removed with its logs. The data files are the user's:
 * rm leaves them. */
#include "cli.h"
#include "dataset_cmd.h"
#include "submit.h"

#include "dataset.h"
#include "dsconf.h"
#include "feed_trust.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static const char add_help[] =
"usage: aegis dataset add NAME --dir DIR --format FORMAT [OPTIONS]\n"
"\n"
"Registers folder DIR as dataset NAME of yours. Its samples are registered\n"
"by 'aegis dataset watch NAME' (or a pipeline's supervisor) as files\n"
"arrive; a file counts once it is closed after writing or moved in.\n"
"\n"
"  --format FORMAT   file: one sample per file, its label (a whole number)\n"
"                    in NAME.label beside it, written last; binary:\n"
"                    fixed-size records, a little-endian label then\n"
"                    float32 features; csv: one sample per line\n"
"  --record-size N   binary: bytes per record (required)\n"
"  --label-size N    binary: bytes of the label, 1, 2, 4 or 8 (default 4)\n"
"  --header          csv: the first line names the columns\n"
"  --sep C           csv: the field separator (default ',')\n"
"  --label-column C  csv: the label's column, a name (with --header) or an\n"
"                    index from 0 (default 0)\n"
"  --ts-column C     csv: the timestamp's column (whole seconds since the\n"
"                    epoch); without it a sample's time is its file's mtime\n"
"  --classes K       labels outside [0, K) are bad records (default: any)\n"
"  --pattern GLOB    names of the data files in DIR (default *.bin, *.csv,\n"
"                    or every name for one sample per file); names\n"
"                    starting with '.' or ending in .tmp are never read\n"
"  --max-size SIZE   stop registering past SIZE of samples (as aegis submit\n"
"                    --mem: 500m, 20g; default: no limit)\n"
"  --help            this text\n"
"\n"
"Each option marked binary or csv is for that format only: given with\n"
"another, it is refused.\n"
"\n"
"Exit status: 0 success, 1 failure (NAME exists), 2 bad usage or input\n"
"(a --dir or --pattern that is not UTF-8 text, as dataset.json holds).\n";

static const char rm_help[] =
"usage: aegis dataset rm NAME\n"
"\n"
"Forgets dataset NAME: removes its key log, file table and dataset.json.\n"
"The files in its folder are left as they are. Refused while a watcher\n"
"of the dataset runs.\n"
"\n"
"Exit status: 0 success, 1 failure (a watcher runs, or removing failed),\n"
"2 bad usage, or NAME is no dataset of yours.\n";

static int copy_opt(char *dst, size_t size, const char *opt, const char *arg) {
    if (strlen(arg) >= size) {
        fprintf(stderr, "aegis dataset add: --%s: longer than %zu bytes\n",
                opt, size - 1);
        return -1;
    }
    strcpy(dst, arg);
    return 0;
}

/* A data folder others can write to, or another user's: said, not
 * refused (a shared folder is a common place for data). The watcher takes
 * only the owner's files from it and follows no link (watch_file.c), but
 * others there can still rename or remove the owner's files. */
static void warn_dir(const char *dir, const struct stat *st) {
    if (st->st_uid != geteuid()) {
        char who[64];
        feed_user_shown(st->st_uid, who, sizeof(who));
        fprintf(stderr, "aegis dataset add: warning: --dir: %s: owned by "
                "user %s, not by you: the watcher takes only your own files "
                "from it\n", dir, who);
    }
    if (st->st_mode & (S_IWGRP | S_IWOTH))
        fprintf(stderr, "aegis dataset add: warning: --dir: %s: writable by "
                "others (mode %04o): the watcher takes only your own files "
                "from it and follows no link, but others can rename or "
                "remove your files there (chmod go-w it)\n", dir,
                (unsigned)(st->st_mode & 07777));
}

static int set_dir(pl_dsconf *c, const char *arg) {
    char *real = realpath(arg, NULL);
    struct stat st;
    int ok = real && stat(real, &st) == 0 && S_ISDIR(st.st_mode) &&
             strlen(real) < sizeof(c->dir);
    if (ok) {
        strcpy(c->dir, real);
        warn_dir(real, &st);
    } else
        fprintf(stderr, "aegis dataset add: --dir: %s: %s\n", arg,
                real ? "not a folder" : strerror(errno));
    free(real);
    return ok ? 0 : -1;
}

static int add_option(int opt, const char *arg, pl_dsconf *c) {
    const char *cmd = "dataset add";
    long v;
    double mib;
    switch (opt) {
    case 'd': return set_dir(c, arg);
    case 'F':
        if (pl_format_parse(arg, &c->format) == 0)
            return 0;
        fprintf(stderr, "aegis dataset add: --format: '%s' is not file, "
                        "binary or csv\n", arg);
        return -1;
    case 'r':
        if (cli_parse_long(cmd, "record-size", arg, 1, 1L << 30, &v) < 0)
            return -1;
        c->record_size = (uint32_t)v;
        return 0;
    case 'l':
        if (cli_parse_long(cmd, "label-size", arg, 1, 8, &v) < 0)
            return -1;
        c->label_size = (uint32_t)v;
        return 0;
    case 'H': c->header = 1; return 0;
    case 's':
        if (strlen(arg) == 1 && arg[0] != '\n') {
            c->sep = arg[0];
            return 0;
        }
        fprintf(stderr, "aegis dataset add: --sep: '%s' is not one "
                        "character\n", arg);
        return -1;
    case 'L': return copy_opt(c->label_column, sizeof(c->label_column),
                              "label-column", arg);
    case 'T': return copy_opt(c->ts_column, sizeof(c->ts_column), "ts-column",
                              arg);
    case 'P': return copy_opt(c->pattern, sizeof(c->pattern), "pattern", arg);
    case 'k':
        if (cli_parse_long(cmd, "classes", arg, 1, __LONG_MAX__, &v) < 0)
            return -1;
        c->classes = v;
        return 0;
    case 'm':
        if (submit_parse_mem(arg, &mib) == 0 && mib > 0) {
            c->max_bytes = (uint64_t)(mib * 1048576.0);
            return 0;
        }
        fprintf(stderr, "aegis dataset add: --max-size: '%s' is not a size "
                        "(500m, 20g; from 1m to 1t)\n", arg);
        return -1;
    }
    return -1;
}

/* mkdir -p of path's parent folders, private to the owner; path itself
 * is left to make. */
static int make_parents(char *path) {
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int rc = mkdir(path, 0700);
        *p = '/';
        if (rc < 0 && errno != EEXIST)
            return -1;
    }
    return 0;
}

/* The options that apply to one format only: given with another, they
 * were stored in dataset.json and never used (--header with one sample
 * per file, --record-size with CSV). */
static const struct {
    int opt;
    const char *name;
    pl_format format;
} format_opts[] = {
    {'r', "record-size", PL_FORMAT_BINARY},
    {'l', "label-size", PL_FORMAT_BINARY},
    {'H', "header", PL_FORMAT_CSV},
    {'s', "sep", PL_FORMAT_CSV},
    {'L', "label-column", PL_FORMAT_CSV},
    {'T', "ts-column", PL_FORMAT_CSV},
};

/* Whether the options given (given[opt] set) all apply to c's format,
 * and binary's required one is there. */
static int options_fit_format(const pl_dsconf *c, const char *given) {
    const char *format = pl_format_name(c->format);
    for (size_t i = 0; i < sizeof(format_opts) / sizeof(*format_opts); i++)
        if (given[format_opts[i].opt] && format_opts[i].format != c->format) {
            fprintf(stderr, "aegis dataset add: --%s is for --format %s, not "
                    "%s\n", format_opts[i].name,
                    pl_format_name(format_opts[i].format), format);
            return -1;
        }
    if (c->format == PL_FORMAT_BINARY && !given['r']) {
        fputs("aegis dataset add: --format binary needs --record-size N "
              "(bytes per record: the label, then float32 features)\n",
              stderr);
        return -1;
    }
    return 0;
}

/* Whether --pattern can match a data file's name: the watcher reads the
 * names in --dir (no '/' in them), and never those starting with '.' or
 * ending in .tmp (files being written), so such a pattern would wait for
 * files that never count. An empty one was taken as no --pattern. */
static int pattern_ok(const char *pattern) {
    size_t len = strlen(pattern);
    const char *why = !len ? "is empty (leave it out for the format's "
                             "default)"
                      : strchr(pattern, '/')
                          ? "holds a '/': it matches names of files in "
                            "--dir, which hold none"
                      : pattern[0] == '.'
                          ? "starts with '.': names starting with '.' are "
                            "never read"
                      : len >= 4 && strcmp(pattern + len - 4, ".tmp") == 0
                          ? "ends in .tmp: names ending in .tmp are never "
                            "read (write there, then rename)"
                          : NULL;
    if (why)
        fprintf(stderr, "aegis dataset add: --pattern '%s' %s\n", pattern,
                why);
    return why ? -1 : 0;
}

static int parse_add(int argc, char **argv, pl_dsconf *c) {
    static const struct option longopts[] = {
        {"dir", required_argument, 0, 'd'},
        {"format", required_argument, 0, 'F'},
        {"record-size", required_argument, 0, 'r'},
        {"label-size", required_argument, 0, 'l'},
        {"header", no_argument, 0, 'H'},
        {"sep", required_argument, 0, 's'},
        {"label-column", required_argument, 0, 'L'},
        {"ts-column", required_argument, 0, 'T'},
        {"pattern", required_argument, 0, 'P'},
        {"classes", required_argument, 0, 'k'},
        {"max-size", required_argument, 0, 'm'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    int opt;
    char given[128] = {0};
    while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (opt == 'h') {
            fputs(add_help, stdout);
            return 1;
        }
        if (opt == '?' || add_option(opt, optarg, c) < 0)
            return -1;
        given[opt] = 1;
    }
    if (optind != argc - 1 || !c->dir[0] || !given['F']) {
        fputs("aegis dataset add: NAME, --dir and --format are required "
              "(see --help)\n", stderr);
        return -1;
    }
    if (options_fit_format(c, given) < 0 ||
        (given['P'] && pattern_ok(c->pattern) < 0))
        return -1;
    return 0;
}

/* A dataset's state files and its folder, removed (the data are the
 * user's, left). 0, or -1 with errno. */
static int remove_state(const char *dsdir) {
    static const char *const files[] = {"keys.log", "files.log",
                                        "dataset.json"};
    char path[4300];
    for (size_t i = 0; i < sizeof(files) / sizeof(*files); i++) {
        snprintf(path, sizeof(path), "%s/%s", dsdir, files[i]);
        if (unlink(path) < 0 && errno != ENOENT)
            return -1;
    }
    return rmdir(dsdir);
}

/* Makes dataset name's folder dsdir and its dataset.json, or leaves none
 * of it: a folder without its dataset.json is no dataset any command
 * reads, and `add` of the name refused it as existing. The folder is
 * made here, not found (another add's is said as existing), so that
 * what is removed on a failure is this add's alone. */
static int make_dataset(const char *name, char *dsdir, const pl_dsconf *c) {
    char err[512];
    if (make_parents(dsdir) < 0 || mkdir(dsdir, 0700) < 0) {
        if (errno == EEXIST)
            fprintf(stderr, "aegis dataset add: dataset %s exists (%s)\n",
                    name, dsdir);
        else
            fprintf(stderr, "aegis dataset add: %s: %s\n", dsdir,
                    strerror(errno));
        return -1;
    }
    if (pl_dsconf_save(dsdir, c, err, sizeof(err)) == 0)
        return 0;
    fprintf(stderr, "aegis dataset add: %s\n", err);
    if (remove_state(dsdir) < 0)
        fprintf(stderr, "aegis dataset add: %s: %s (remove it by hand)\n",
                dsdir, strerror(errno));
    return -1;
}

int cli_dataset_add(int argc, char **argv) {
    pl_dsconf c = {.format = PL_FORMAT_BINARY, .label_size = 4, .sep = ','};
    strcpy(c.label_column, "0");
    int rc = parse_add(argc, argv, &c);
    if (rc != 0)
        return rc > 0 ? CLI_OK : CLI_USAGE;
    const char *name = argv[optind];
    char state[4096], dsdir[4200], err[512];
    if (!c.pattern[0])
        strcpy(c.pattern, pl_format_default_pattern(c.format));
    snprintf(c.name, sizeof(c.name), "%.*s", PL_NAME_MAX - 1, name);
    if (pl_dsconf_check(&c, err, sizeof(err)) < 0) {
        fprintf(stderr, "aegis dataset add: %s\n", err);
        return CLI_USAGE;
    }
    if (!pl_state_dir(state, sizeof(state)) ||
        pl_dataset_dir(state, name, dsdir, sizeof(dsdir)) < 0) {
        fprintf(stderr, "aegis dataset add: NAME: '%s' is not a dataset name "
                "(letters, digits, '.', '_', '-'), or no state folder "
                "($AEGIS_STATE_HOME, $XDG_STATE_HOME, $HOME)\n", name);
        return CLI_USAGE;
    }
    if (make_dataset(name, dsdir, &c) < 0)
        return CLI_FAIL;
    printf("dataset %s: %s (%s)\n", name, c.dir, pl_format_name(c.format));
    return CLI_OK;
}

/* Whether a watcher holds the dataset's key log. */
static int watched(const char *dsdir) {
    char path[4300];
    snprintf(path, sizeof(path), "%s/keys.log", dsdir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int busy = flock(fd, LOCK_EX | LOCK_NB) < 0;
    close(fd);
    return busy;
}

int cli_dataset_rm(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--help") == 0) {
        fputs(rm_help, stdout);
        return CLI_OK;
    }
    char state[4096], dsdir[4200];
    if (argc != 2) {
        fputs(rm_help, stderr);
        return CLI_USAGE;
    }
    if (!pl_state_dir(state, sizeof(state))) {
        fputs("aegis dataset rm: no state folder ($AEGIS_STATE_HOME, "
              "$XDG_STATE_HOME or $HOME)\n", stderr);
        return CLI_FAIL;
    }
    int rc = dataset_known("rm", state, argv[1], dsdir, sizeof(dsdir));
    if (rc != CLI_OK)
        return rc;
    if (watched(dsdir)) {
        fprintf(stderr, "aegis dataset rm: dataset %s has a watcher running; "
                "stop it first\n", argv[1]);
        return CLI_FAIL;
    }
    if (remove_state(dsdir) < 0) {
        fprintf(stderr, "aegis dataset rm: %s: %s\n", dsdir, strerror(errno));
        return CLI_FAIL;
    }
    return CLI_OK;
}
