/* dish.c -- the `dish` command: checks and compiles DISH procedures on the
 * ground, disassembles bytecode, and runs it on the simulated satellite.
 * Exit codes as the `dipp` command: 0 success, 1 bad input (a source or
 * bytecode refused), 2 usage. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dish_compile.h"
#include "dish_disasm.h"
#include "dish_sim.h"
#include "dish_vm.h"

#define EXIT_BAD 1
#define EXIT_USAGE 2
#define MAX_SOURCE (256 * 1024)

static const char usage[] =
    "Usage: dish COMMAND [OPTIONS] FILE...\n"
    "DISH: imaging procedures for the payload's co-processor, compiled and\n"
    "verified on the ground, verified again and run on board.\n"
    "\n"
    "Commands:\n"
    "  check FILE.dish            compile and verify, print the size and each\n"
    "                             procedure's bound on the instructions of a run\n"
    "  compile FILE.dish [-o FILE.dbc]\n"
    "                             write the bytecode (default: FILE.dbc)\n"
    "  disasm FILE.dbc            verify and print the bytecode\n"
    "  run --sim [--speed N] [--hours H] FILE.dbc...\n"
    "                             load every image on a simulated satellite,\n"
    "                             start each image's first procedure (it must\n"
    "                             take no arguments), print the telemetry;\n"
    "                             --speed: simulated seconds per real second\n"
    "                             (default 0: as fast as possible); --hours:\n"
    "                             simulated time (default 2)\n"
    "\n"
    "Exit status: 0 success, 1 a file refused (the reason on stderr), 2 usage.\n";

/* Says why path could not be opened, read or written, after "dish:" as
 * every message of the command starts (perror's had no prefix). */
static void file_error(const char *path) {
    fprintf(stderr, "dish: %s: %s\n", path, strerror(errno));
}

/* Reads path whole into a malloc'ed buffer: its length, or -1. Only a
 * regular file: a folder reads as nothing, a FIFO may never end. */
static long read_file(const char *path, char **out) {
    struct stat st;
    FILE *f = fopen(path, "rb");
    if (!f || fstat(fileno(f), &st) != 0) {
        file_error(path);
        if (f)
            fclose(f);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        fprintf(stderr, "dish: %s: not a regular file\n", path);
        fclose(f);
        return -1;
    }
    char *buf = malloc(MAX_SOURCE + 1);
    size_t n = buf ? fread(buf, 1, MAX_SOURCE + 1, f) : 0;
    int failed = ferror(f);
    fclose(f);
    if (!buf || failed || n > MAX_SOURCE) {
        if (failed)
            fprintf(stderr, "dish: %s: cannot be read\n", path);
        else
            fprintf(stderr, "dish: %s: over %d bytes\n", path, MAX_SOURCE);
        free(buf);
        return -1;
    }
    buf[n] = 0;
    *out = buf;
    return (long)n;
}

/* Compiles path into img: image bytes, or -1 with the error printed. */
static int compile_file(const char *path, uint8_t *img) {
    char *src, err[256];
    long n = read_file(path, &src);
    if (n < 0)
        return -1;
    int len = dish_compile(path, src, (size_t)n, img, DISH_MAX_IMAGE, err, sizeof err);
    free(src);
    if (len < 0)
        fprintf(stderr, "%s\n", err);
    return len;
}

/* The verifier's instruction bound of each procedure of img[0..n), an
 * image the compiler has verified already: this reads back what the
 * verifier derived. */
static void print_bounds(const uint8_t *img, int n) {
    static dish_image im;
    char err[256];
    if (dish_verify(img, (size_t)n, NULL, &im, err, sizeof err))
        return;
    for (int k = 0; k < im.nprocs; k++)
        printf("  slot %u: at most %lu instructions a run, %u more per wait re-check\n",
               im.proc[k].slot, (unsigned long)im.steps[k], im.recheck[k]);
}

static int cmd_check(int argc, char **argv) {
    uint8_t img[DISH_MAX_IMAGE];
    if (argc != 2) {
        fputs("dish check: one FILE.dish (dish --help)\n", stderr);
        return EXIT_USAGE;
    }
    int n = compile_file(argv[1], img);
    if (n < 0)
        return EXIT_BAD;
    printf("%s: %u procedures, %d bytes, %d uplink chunks of %d bytes\n", argv[1], img[5], n,
           (n + DISH_PACKET - 1) / DISH_PACKET, DISH_PACKET);
    print_bounds(img, n);
    return 0;
}

/* FILE.dish -> FILE.dbc */
static void default_output(const char *in, char *out, size_t cap) {
    size_t n = strlen(in);
    if (n > 5 && !strcmp(in + n - 5, ".dish"))
        n -= 5;
    snprintf(out, cap, "%.*s.dbc", (int)n, in);
}

static int write_file(const char *path, const uint8_t *data, int n) {
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(data, 1, (size_t)n, f) == (size_t)n;
    /* fclose once, whatever it says: a second would free f again */
    if ((f && fclose(f) != 0) || !ok) {
        file_error(path);
        return -1;
    }
    return 0;
}

static int cmd_compile(int argc, char **argv) {
    uint8_t img[DISH_MAX_IMAGE];
    char out[1024];
    if (argc == 4 && !strcmp(argv[2], "-o"))
        snprintf(out, sizeof out, "%s", argv[3]);
    else if (argc == 2)
        default_output(argv[1], out, sizeof out);
    else {
        fputs("dish compile: FILE.dish [-o FILE.dbc] (dish --help)\n", stderr);
        return EXIT_USAGE;
    }
    int n = compile_file(argv[1], img);
    if (n < 0)
        return EXIT_BAD;
    return write_file(out, img, n) ? EXIT_BAD : 0;
}

/* Reads a bytecode file into img; verifies it into *im unless im is NULL
 * (the VM's load verifies it then). */
static int read_image(const char *path, uint8_t *img, long *len, dish_image *im) {
    char *buf, err[256];
    long n = read_file(path, &buf);
    if (n < 0)
        return -1;
    if (n > DISH_MAX_IMAGE) {
        fprintf(stderr, "dish: %s: over %d bytes, not a DISH image\n", path, DISH_MAX_IMAGE);
        free(buf);
        return -1;
    }
    memcpy(img, buf, (size_t)n);
    free(buf);
    *len = n;
    if (im && dish_verify(img, (size_t)n, NULL, im, err, sizeof err)) {
        fprintf(stderr, "dish: %s: %s\n", path, err);
        return -1;
    }
    return 0;
}

static int cmd_disasm(int argc, char **argv) {
    static uint8_t img[DISH_MAX_IMAGE];
    static dish_image im;
    long n;
    if (argc != 2) {
        fputs("dish disasm: one FILE.dbc (dish --help)\n", stderr);
        return EXIT_USAGE;
    }
    if (read_image(argv[1], img, &n, &im))
        return EXIT_BAD;
    dish_disasm(stdout, &im);
    return 0;
}

typedef struct run_opts {
    double speed, hours;
    int first; /* argv index of the first image */
} run_opts;

static int number(const char *opt, const char *s, double hi, double *v) {
    char *end;
    *v = s ? strtod(s, &end) : -1;
    if (!s || !*s || *end || !(*v >= 0 && *v <= hi)) { /* NaN too */
        /* hi is whole (1e9, a year's hours): in full, not %g's 1e+09 */
        fprintf(stderr, "dish run: %s wants a number from 0 to %.0f\n", opt, hi);
        return -1;
    }
    return 0;
}

static int run_options(int argc, char **argv, run_opts *o) {
    int sim = 0;
    *o = (run_opts){0, 2, 0};
    for (int k = 1; k < argc; k++) {
        if (!strcmp(argv[k], "--sim"))
            sim = 1;
        else if (!strcmp(argv[k], "--speed") || !strcmp(argv[k], "--hours")) {
            int sp = argv[k][2] == 's';
            if (number(argv[k], argv[k + 1], sp ? 1e9 : 24 * 365, sp ? &o->speed : &o->hours))
                return -1;
            k++;
        } else if (argv[k][0] == '-') {
            fprintf(stderr, "dish run: unknown option %s (dish --help)\n", argv[k]);
            return -1;
        } else if (!o->first)
            o->first = k;
    }
    if (!sim || !o->first)
        fputs("dish run: --sim and at least one FILE.dbc (only the simulator exists yet)\n",
              stderr);
    return sim && o->first ? 0 : -1;
}

/* Loads path on the VM and starts its first procedure. */
static int load_and_start(dish_vm *vm, const char *path) {
    static uint8_t img[DISH_MAX_IMAGE];
    char err[256];
    long n;
    if (read_image(path, img, &n, NULL))
        return -1;
    if (dish_vm_load(vm, img, (size_t)n, err, sizeof err)) {
        fprintf(stderr, "dish: %s: refused: %s\n", path, err);
        return -1;
    }
    int rc = dish_vm_start(vm, img[DISH_HDR], NULL, 0);
    if (rc < 0) {
        dish_vm_refusal(vm, img[DISH_HDR], rc, err, sizeof err);
        fprintf(stderr, "dish: %s: %s\n", path, err);
        return -1;
    }
    return 0;
}

static void summary(const dish_sim *sim, const dish_vm *vm) {
    printf("power: main processor awake %d times, %.1f s in all%s\n", sim->nawake,
           (double)sim->awake_total_ms / 1000.0, sim->awake ? " (still awake)" : "");
    printf("clock: %s, largest correction %lld ms, bound now %lld ms\n",
           vm->synced ? "set from GNSS" : "never set (no fix)", (long long)vm->max_drift_ms,
           (long long)dish_vm_clock_bound(vm));
    printf("runs still alive: %d\n", dish_vm_alive(vm));
}

static int cmd_run(int argc, char **argv) {
    static dish_sim sim;
    static dish_vm vm;
    run_opts o;
    if (run_options(argc, argv, &o))
        return EXIT_USAGE;
    dish_sim_init(&sim);
    sim.speed = o.speed;
    sim.print = stdout;
    dish_vm_init(&vm, &sim.pl);
    for (int k = o.first; k < argc; k++) {
        if (!strcmp(argv[k], "--speed") || !strcmp(argv[k], "--hours"))
            k++;
        else if (argv[k][0] != '-' && load_and_start(&vm, argv[k]))
            return EXIT_BAD;
    }
    dish_vm_run(&vm, (int64_t)(o.hours * 3600e3));
    summary(&sim, &vm);
    return 0;
}

int main(int argc, char **argv) {
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } cmds[] = {{"check", cmd_check}, {"compile", cmd_compile}, {"disasm", cmd_disasm},
                {"run", cmd_run}};
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : 0;
    }
    for (int k = 2; k < argc; k++)
        if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
            fputs(usage, stdout);
            return 0;
        }
    for (size_t k = 0; k < sizeof cmds / sizeof *cmds; k++)
        if (!strcmp(argv[1], cmds[k].name))
            return cmds[k].fn(argc - 1, argv + 1);
    fprintf(stderr, "dish: unknown command '%s' (dish --help)\n", argv[1]);
    return EXIT_USAGE;
}
