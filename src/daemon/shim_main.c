/* shim_main.c -- aegis-shim, the watcher of one job attempt (exec.h), and
 * the launcher that forks watchers (launcher.h): a program of its own so
 * that aegisd starts them without copying its memory. aegisd alone starts
 * it (exec_spawn); its arguments are aegisd's. */
#include "exec.h"

int main(int argc, char **argv) { return exec_shim_main(argc, argv); }
