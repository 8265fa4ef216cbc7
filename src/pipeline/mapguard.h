/* mapguard.h -- reading a mapped file that another process may shrink:
 * a read past the file's new end raises SIGBUS, which would end the
 * process (a watcher reading a CSV file that its writer rewrote in place,
 * `> file`). Run such reads guarded: the fault then ends only the guarded
 * call, which reports it.
 *
 * The handler is the whole process's, installed by the first guarded
 * call (and again by a later one if another was set meanwhile); a SIGBUS
 * outside a guarded call meets the action set before it. Each thread has
 * its own guard.
 * The guarded function must hold no lock and allocate nothing that the
 * jump would leak: it is left where it faulted.
 */
#ifndef AEGIS_PL_MAPGUARD_H
#define AEGIS_PL_MAPGUARD_H

typedef void (*pl_guarded_fn)(void *arg);

/* Runs fn(arg): 0, or -1 when a read in it faulted with SIGBUS (or the
 * handler could not be installed: then fn did not run). Not for use
 * inside a signal handler. */
int pl_map_guarded(pl_guarded_fn fn, void *arg);

#endif
