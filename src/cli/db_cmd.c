/* db_cmd.c -- `aegis db backup FILE`: asks aegisd for a copy of its
 * database, made with SQLite's online backup, in one step on aegisd's
 * loop, while the jobs run. aegisd
 * writes the file (as root, or its own user), so FILE is made absolute
 * here, against this command's directory.
 */
#include "cli.h"
#include "client.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char help[] =
"NAME\n    aegis db - aegisd's database: a backup\n\n"
"SYNOPSIS\n    aegis db backup FILE [--socket PATH]\n\n"
"DESCRIPTION\n"
"    aegisd writes a consistent copy of its database (STATE/aegis.db) to\n"
"    FILE, a new file of mode 0600 (it holds every job's command and\n"
"    environment), by SQLite's online backup, in one step: running jobs\n"
"    go on and `aegis gpus` is answered meanwhile, while other requests\n"
"    wait for the copy. A relative FILE is taken from this directory.\n"
"    This command waits as long as the copy takes. Only root\n"
"    or aegisd's user may ask. To restore, stop aegisd and put the copy in\n"
"    place of STATE/aegis.db.\n\n"
"OPTIONS\n"
"    --socket PATH   aegisd's socket (default $AEGIS_SOCKET, else\n"
"                    " CLIENT_DEFAULT_SOCKET ")\n"
"\nEXIT STATUS\n"
"    0 written, 1 aegisd unreachable, busy or failing, 2 bad usage or a\n"
"    request aegisd refused (not root or aegisd's user, FILE exists).\n";

int cli_db(int argc, char **argv) {
    client_flags f;
    int rc = client_options("db", argc, argv, help, "", 2, 2, &f);
    if (rc) return rc < 0 ? CLI_OK : rc;
    if (strcmp(argv[f.first_arg], "backup") != 0) {
        fprintf(stderr, "aegis db: '%s' is not a db command (backup)\n",
                argv[f.first_arg]);
        return CLI_USAGE;
    }
    const char *file = argv[f.first_arg + 1];
    if (!file[0]) { /* was taken as the current folder, "Is a directory" */
        fprintf(stderr, "aegis db: backup: the path is empty\n");
        return CLI_USAGE;
    }
    char cwd[PATH_MAX], path[PATH_MAX + 256];
    if (file[0] != '/' && !getcwd(cwd, sizeof(cwd))) {
        perror("aegis db: the current directory");
        return CLI_FAIL;
    }
    snprintf(path, sizeof(path), "%s%s%s", file[0] == '/' ? "" : cwd,
             file[0] == '/' ? "" : "/", file);
    json_t *ans = client_call("db", client_socket(f.socket),
                              json_pack("{s:s, s:s}", "op", "db_backup",
                                        "path", path), &rc);
    if (!ans) return rc;
    printf("database copied to %s\n", path);
    json_decref(ans);
    return CLI_OK;
}
