/* mapguard.c -- SIGBUS ends a guarded read, not the process (mapguard.h). */
#define _GNU_SOURCE
#include "mapguard.h"

#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>

/* Where the guarded call of this thread resumes; NULL when none runs.
 * Volatile: the handler reads it, and where fn is inlined the compiler
 * would otherwise drop the store before fn's reads as dead. */
static _Thread_local sigjmp_buf *volatile guard;
static struct sigaction before; /* SIGBUS's action before ours */

static void on_sigbus(int sig, siginfo_t *info, void *ucontext) {
    if (guard)
        siglongjmp(*guard, 1);
    /* Not ours: the action before, as if we were never installed (the
     * faulting read runs again and meets it). */
    (void)info, (void)ucontext;
    sigaction(sig, &before, NULL);
}

/* Makes on_sigbus SIGBUS's handler, unless it is already: checked at
 * every call, since another part of the program may have set its own
 * since (a test framework does, around each test). */
static int install(void) {
    struct sigaction now, sa;
    if (sigaction(SIGBUS, NULL, &now) != 0)
        return -1;
    if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_sigbus)
        return 0;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    before = now;
    return sigaction(SIGBUS, &sa, NULL);
}

int pl_map_guarded(pl_guarded_fn fn, void *arg) {
    if (install() != 0)
        return -1;
    sigjmp_buf here;
    if (sigsetjmp(here, 1)) {
        guard = NULL;
        return -1;
    }
    guard = &here;
    fn(arg);
    guard = NULL;
    return 0;
}
