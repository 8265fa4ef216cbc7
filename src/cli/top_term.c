/* top_term.c -- the terminal of `aegis top`, driven with plain escape
 * sequences (VT100's and xterm's alternate screen, which every terminal
 * emulator and SSH client speaks): no library, no terminfo lookup.
 *
 * termios loses ICANON and ECHO only, so that q acts at once and shows
 * nothing; Ctrl-C and Ctrl-Z stay signals (ISIG), caught like SIGWINCH
 * and SIGTERM by a handler that sets a flag and writes a byte to a pipe
 * the loop polls beside stdin: a signal that lands between a check and
 * the poll still wakes it.
 */
#include "top_term.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#define LEAVE_SCREEN "\033[?25h\033[?1049l"

static struct termios saved;
static bool taken;
static int wake[2] = {-1, -1};
static volatile sig_atomic_t got_quit, got_resize, got_stop, busy;

/* A quit while aegis top waits on aegisd, which may never answer: the
 * terminal back at once (write and tcsetattr are async-signal-safe), and
 * out. */
static void leave_now(void) {
    ssize_t ignored = write(1, LEAVE_SCREEN, sizeof(LEAVE_SCREEN) - 1);
    (void)ignored;
    tcsetattr(0, TCSANOW, &saved);
    _exit(1);
}

static void on_signal(int sig) {
    int saved_errno = errno;
    if (sig == SIGWINCH) got_resize = 1;
    else if (sig == SIGTSTP) got_stop = 1;
    else if (busy) leave_now();
    else got_quit = 1;
    ssize_t ignored = write(wake[1], "", 1); /* full pipe: already awake */
    (void)ignored;
    errno = saved_errno;
}

/* No SA_RESTART: the poll returns at once. */
static void catch_signals(void (*handler)(int)) {
    static const int sigs[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGWINCH,
                               SIGTSTP};
    struct sigaction sa = {.sa_handler = handler};
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof(sigs) / sizeof(*sigs); i++)
        sigaction(sigs[i], &sa, NULL);
}

static int open_wake_pipe(void) {
    if (wake[0] >= 0) return 0;
    if (pipe(wake)) return -1;
    for (int i = 0; i < 2; i++)
        if (fcntl(wake[i], F_SETFL, O_NONBLOCK) ||
            fcntl(wake[i], F_SETFD, FD_CLOEXEC))
            return -1;
    return 0;
}

int term_enter(void) {
    static bool once;
    struct termios keys;
    if (open_wake_pipe() || tcgetattr(0, &saved)) goto fail;
    keys = saved;
    keys.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
    keys.c_cc[VMIN] = 1;
    keys.c_cc[VTIME] = 0;
    if (tcsetattr(0, TCSAFLUSH, &keys)) goto fail;
    taken = true;
    if (!once) {
        atexit(term_leave);
        once = true;
    }
    catch_signals(on_signal);
    /* the alternate screen, cleared, the cursor hidden */
    fputs("\033[?1049h\033[H\033[2J\033[?25l", stdout);
    fflush(stdout);
    return 0;
fail:
    fprintf(stderr, "aegis top: cannot set up the terminal: %s\n",
            strerror(errno));
    return -1;
}

void term_leave(void) {
    if (!taken) return;
    taken = false;
    catch_signals(SIG_DFL);
    fputs(LEAVE_SCREEN, stdout);
    fflush(stdout);
    tcsetattr(0, TCSAFLUSH, &saved);
}

void term_busy(bool waiting) {
    busy = waiting;
}

void term_size(int *rows, int *cols) {
    struct winsize ws;
    bool known = ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col;
    *rows = known ? ws.ws_row : 24;
    *cols = known ? ws.ws_col : 80;
}

/* Each row erased, then written: a full-width line never meets an erase
 * at its last column, which some terminals would apply to that column.
 * stdout is fully buffered (aegis top), so a frame goes out at once. */
void term_draw(const top_lines *lines) {
    int rows, cols;
    term_size(&rows, &cols);
    for (int i = 0; i < rows; i++)
        printf("\033[%d;1H\033[2K%s", i + 1,
               (size_t)i < lines->n ? lines->line[i] : "");
    fflush(stdout);
}

/* Ctrl-Z: the terminal back to the shell, stopped until fg, taken again. */
static void suspend(void) {
    term_leave();
    raise(SIGTSTP);
    term_enter();
}

static term_event read_keys(void) {
    char keys[64];
    ssize_t n = read(0, keys, sizeof(keys));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return TERM_NOTHING;
    if (n <= 0) return TERM_QUIT; /* the terminal is gone */
    term_event ev = TERM_NOTHING;
    for (ssize_t i = 0; i < n; i++) {
        if (keys[i] == 'q' || keys[i] == 'Q' || keys[i] == 3) return TERM_QUIT;
        if (keys[i] == ' ') ev = TERM_REFRESH;
    }
    return ev;
}

term_event term_wait(int timeout_ms) {
    struct pollfd fds[2] = {{.fd = 0, .events = POLLIN},
                            {.fd = wake[0], .events = POLLIN}};
    int ready = poll(fds, 2, timeout_ms);
    char drained[64];
    while (read(wake[0], drained, sizeof(drained)) > 0) continue;
    if (got_quit) return TERM_QUIT;
    if (got_stop) {
        got_stop = 0;
        suspend();
        return TERM_RESIZE;
    }
    if (got_resize) {
        got_resize = 0;
        return TERM_RESIZE;
    }
    return ready > 0 && fds[0].revents ? read_keys() : TERM_NOTHING;
}
