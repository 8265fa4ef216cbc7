/* ground_help.c -- `dipp ground COMMAND --help`: each command's own help
 * (ground.h), on stdout, exit 0. `dipp ground --help` lists the commands;
 * this tells one command's options, what it does, and its exit status. */
#include <string.h>

#include "cli.h"
#include "ground.h"

#define OPTS "[--hub PORT] [--timeout-ms N] [--retry-ms N]"
#define OPTS_SAID "The hub and wait options come before the command (dipp ground --help).\n"

static const char keygen[] =
    "Usage: dipp ground keygen [--force] PREFIX\n"
    "Writes a new Ed25519 key pair: PREFIX.key, the private key that signs\n"
    "uploads, slot writes and commands (mode 0600: its owner's alone, whatever\n"
    "the umask),\n"
    "and PREFIX.pub, the public key the satellite holds (dipp sat --key). It\n"
    "needs no hub.\n"
    "  --force      replace an existing pair; without it an existing PREFIX.key\n"
    "               or PREFIX.pub is kept and nothing is written (the old\n"
    "               private key would be lost, and the board trusts its match)\n"
    "Exit status: 0 written, 1 a file exists or cannot be written, 2 usage.\n";

static const char upload[] =
    "Usage: dipp ground " OPTS " upload --key K.key --version V\n"
    "         [--serial N] [--base OLD.so [--base-version B]] [--in FMT] [--out FMT]\n"
    "         [--width W --height H] NAME FILE.so\n"
    "Uploads FILE.so as module NAME, version V, signed: in chunks, resumed\n"
    "across passes; the satellite checks it, test-runs it on a camera scene and\n"
    "switches it in. Waits until it is installed or refused, and prints the\n"
    "outcome, its number and the satellite's reason.\n"
    "  --key K.key        the ground's private key (dipp ground keygen)\n"
    "  --version V        1 to 4000000000, above every version of NAME the board\n"
    "                     accepted (an old or replayed upload is refused, 1003000)\n"
    "  --serial N         the serial of K.key on board (default 1; see rotate)\n"
    "  --base OLD.so      send a delta against OLD.so, a copy of the version of\n"
    "                     NAME active on board: a few bytes instead of the module\n"
    "  --base-version B   the version OLD.so is on board (default V - 1)\n"
    "  --in FMT --out FMT the test-run's input and output formats: gray, rgb,\n"
    "                     bayer, jpeg or png (default gray)\n"
    "  --width W --height H\n"
    "                     the test-run's output shape (default 0: any)\n" OPTS_SAID
    "Exit status: 0 installed (or active on board already), 1 refused (the\n"
    "number says why), a file unread or no answer, 2 usage.\n";

static const char rotate[] =
    "Usage: dipp ground " OPTS " rotate --key OLD.key --serial N NEW.pub\n"
    "Installs NEW.pub as the satellite's key number N (the current serial + 1),\n"
    "signed with the current private key OLD.key. Uploads, slot writes and\n"
    "commands are then signed with NEW.pub's private key, uploads with\n"
    "--serial N.\n" OPTS_SAID
    "Exit status: 0 installed, 1 refused (the number says why), a file unread or\n"
    "no answer, 2 usage.\n";

static const char slot[] =
    "Usage: dipp ground " OPTS " slot --key K.key [--version V]\n"
    "         (--pipeline N | --config N) DEF.yaml\n"
    "Writes the definition DEF.yaml, encoded, into pipeline slot N (1-6) or\n"
    "module-configuration slot N (1-20) on board, signed with K.key. A\n"
    "definition whose pipeline: names another pipeline than --pipeline is\n"
    "refused here, before anything is sent.\n"
    "  --key K.key      the ground's private key (dipp ground keygen)\n"
    "  --version V      above the slot's version on board (default: the clock,\n"
    "                   in seconds); the same write sent again is answered\n"
    "                   \"already on board\"\n" OPTS_SAID
    "Exit status: 0 written, 1 a bad definition or key file, refused (the number\n"
    "says why) or no answer, 2 usage.\n";

static const char telemetry[] =
    "Usage: dipp ground " OPTS " telemetry\n"
    "Prints the satellite's status parameters, one KEY=VALUE a line: frames,\n"
    "images_processed, batches_lost, last_error, uploads, the ring, each\n"
    "module's version (docs/orbit.md, \"Telemetry and images\").\n" OPTS_SAID
    "Exit status: 0 printed, 1 no answer, 2 usage.\n";

/* What the commands that change the board say of --key and --counter. */
#define KEY_SAID \
    "  --key K.key    the ground's private key: the board takes the command only\n" \
    "                 signed with it\n" \
    "  --counter N    the command's number (1 to 2^64 - 1), above every one the\n" \
    "                 board has taken (default: the clock, in microseconds);\n" \
    "                 give it when the clock was set back, as a refusal\n" \
    "                 (1003000) says\n"

static const char images[] =
    "Usage: dipp ground " OPTS " images --key K.key [--counter N] --out DIR\n"
    "         [--max N]\n"
    "Downlinks the images of the satellite's ring, best first, into DIR as\n"
    "image-ID-pPRIORITY.EXT. Each is acknowledged once saved, signed, and the\n"
    "satellite then drops it; one not saved stays on board.\n" KEY_SAID
    "  --out DIR      a writable folder (checked before anything is asked)\n"
    "  --max N        at most N images (default: until the ring is empty)\n" OPTS_SAID
    "Exit status: 0 done, 1 DIR not writable, an image not saved, three that did\n"
    "not come whole, an acknowledgement refused (the image stays on board), or\n"
    "no answer, 2 usage.\n";

static const char ping[] =
    "Usage: dipp ground " OPTS " ping\n"
    "Asks node 162 for an echo (CSP port 1).\n" OPTS_SAID
    "Exit status: 0 it answers, 1 no answer, 2 usage.\n";

const char ground_proc_help[] =
    "Usage: dipp ground " OPTS " proc COMMAND ...\n"
    "DISH procedures on board (docs/orbit.md, \"Procedures on the satellite\").\n"
    "  upload --key K.key [--serial N] --version V [--name NAME] FILE.dish|FILE.dbc\n"
    "                      compile (a .dish) and upload an image of procedures,\n"
    "                      signed; the satellite verifies, stores and loads it\n"
    "                      (NAME: the file's, without its extension)\n"
    "  list                the procedures on board, one line per slot\n"
    "  run KEY SLOT [ARG...]\n"
    "                      start the procedure in SLOT (an ARG with a point is a\n"
    "                      fix, Q16.16)\n"
    "  stop KEY SLOT       stop every run inside the procedure in SLOT, those\n"
    "                      calling it from another slot too (each ends with a\n"
    "                      fault record, killed)\n"
    "  delete KEY SLOT     delete the procedure in SLOT (refused while another\n"
    "                      calls it or it runs)\n"
    "  log [--from N]      the run records from index N on (start, end, fault, tm)\n"
    "KEY is --key K.key [--counter N]: run, stop and delete change the board,\n"
    "which takes them only signed with the key that signs uploads.\n" KEY_SAID
    OPTS_SAID
    "Exit status: 0 done, 1 refused (the number says why), a file refused or no\n"
    "answer, 2 usage.\n";

static const struct {
    const char *name, *text;
} helps[] = {{"keygen", keygen}, {"upload", upload},       {"rotate", rotate},
             {"slot", slot},     {"telemetry", telemetry}, {"images", images},
             {"ping", ping},     {"proc", ground_proc_help}};

int ground_help(int argc, char **argv) {
    for (size_t k = 0; k < sizeof helps / sizeof *helps; k++)
        if (!strcmp(argv[0], helps[k].name))
            return cli_help(argc, argv, helps[k].text);
    return 0; /* an unknown command: said so by the dispatch */
}
