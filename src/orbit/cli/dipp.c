/* dipp.c -- the `dipp` command: runs DIPP pipeline definitions on the
 * simulated camera's frames, encodes definitions for the uplink, and reads
 * and writes the on-board slots. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "Usage: dipp COMMAND [OPTIONS] ...\n"
    "DIPP: a modular image-processing pipeline for a CubeSat payload.\n"
    "Each module runs in its sandboxed worker process (time and memory limits,\n"
    "no files, no sockets); a failing module loses its batch only, reported as\n"
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
    "  sat --store DIR --modules DIR --key GROUND.pub\n"
    "                 the satellite's daemon on a CSP ZMQ hub (node 162)\n"
    "  link --ground PORT --sat PORT [OPTIONS]\n"
    "                 the link simulator between two hubs (loss, corruption,\n"
    "                 latency, passes)\n"
    "  ground COMMAND ...\n"
    "                 the ground station: keys, signed uploads, key rotation,\n"
    "                 slots, telemetry, images (node 10)\n"
    "\n"
    "`dipp COMMAND --help` tells a command's options.\n"
    "Exit status: 0 success, 1 bad input, 2 usage, 3 run lost a batch.\n";

int main(int argc, char **argv) {
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } cmds[] = {{"run", cmd_run}, {"encode", cmd_encode}, {"decode", cmd_decode},
                {"store", cmd_store}, {"slots", cmd_slots},
                {"sat", cmd_sat}, {"link", cmd_link}, {"ground", cmd_ground}};
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
