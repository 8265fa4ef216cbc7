/* dipp.c -- the `dipp` command: runs DIPP pipeline definitions on the
 * simulated camera's frames, encodes definitions for the uplink, and reads
 * and writes the on-board slots. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "Usage: dipp COMMAND [OPTIONS] ...\n"
    "DIPP: a modular image-processing pipeline for a CubeSat payload.\n"
    "Each module runs in a sandboxed child (time and memory limits, no files,\n"
    "no sockets); a failing module loses its batch only, reported as\n"
    "code*1000 + pipeline*100 + module (docs/orbit.md lists the codes).\n"
    "\n"
    "Commands:\n"
    "  run --modules DIR [OPTIONS] DEF.yaml...\n"
    "                 run each definition on each simulated camera frame\n"
    "  encode DEF.yaml [-o FILE]\n"
    "                 encode a YAML definition for the uplink (at most 188 bytes)\n"
    "  decode FILE    print an encoded definition as YAML\n"
    "  store --store DIR [--config N] DEF.yaml\n"
    "                 write a definition into its pipeline slot (1-6), or into\n"
    "                 module-configuration slot N (1-20), crash-safe\n"
    "  slots --store DIR\n"
    "                 list the slots and what each holds\n"
    "\n"
    "`dipp COMMAND --help` tells a command's options.\n"
    "Exit status: 0 success, 1 bad input, 2 usage, 3 run lost a batch.\n";

int main(int argc, char **argv) {
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } cmds[] = {{"run", cmd_run}, {"encode", cmd_encode}, {"decode", cmd_decode},
                {"store", cmd_store}, {"slots", cmd_slots}};
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : 0;
    }
    for (size_t k = 0; k < sizeof cmds / sizeof *cmds; k++)
        if (!strcmp(argv[1], cmds[k].name))
            return cmds[k].fn(argc - 1, argv + 1);
    fprintf(stderr, "dipp: unknown command '%s' (dipp --help)\n", argv[1]);
    return EXIT_USAGE;
}
