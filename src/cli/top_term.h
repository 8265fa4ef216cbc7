/* top_term.h -- the terminal of `aegis top`: full screen (the alternate
 * screen, keys read one at a time without echo), given back as it was
 * however aegis top ends, and the keys and signals its loop waits for.
 */
#ifndef AEGIS_TOP_TERM_H
#define AEGIS_TOP_TERM_H

#include "top_view.h"

typedef enum term_event {
    TERM_NOTHING,   /* a key that means nothing, or the timeout */
    TERM_QUIT,      /* q, Ctrl-C, Ctrl-\, SIGTERM, SIGHUP, the terminal
                       gone */
    TERM_REFRESH,   /* space: refresh now */
    TERM_RESIZE,    /* SIGWINCH, or back from Ctrl-Z: draw again */
} term_event;

/* Takes the terminal on stdin and stdout; -1 after saying why not. */
int term_enter(void);
/* Gives it back as term_enter found it; does nothing when not taken. */
void term_leave(void);
/* Says aegis top is waiting on aegisd (true) or not (false): a quit
 * signal meanwhile (Ctrl-C) gives the terminal back and exits 1 at once,
 * as a hung aegisd would never let the loop see it. */
void term_busy(bool waiting);
/* The terminal's size (24x80 when it does not say). */
void term_size(int *rows, int *cols);
/* Draws lines from the top left corner and clears what is below. */
void term_draw(const top_lines *lines);
/* Waits at most timeout_ms for a key or a signal. */
term_event term_wait(int timeout_ms);

#endif
