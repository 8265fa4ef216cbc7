/* platform_workers_posix.c -- the fork server's workers. A worker is a
 * child of the server that runs every call of one key (a module file):
 * the module is loaded, filtered and given its mappings on the first call,
 * and later calls only compute. The server watches each call as it
 * watched a one-call child: a deadline (SIGKILL; the worker also has
 * alarm() as a first line), a crash seen as the socket's end. Between
 * calls a worker is stopped (SIGSTOP), so no code of its module runs
 * (a timer's handler, say) while it waits; it also blocks every signal
 * from its answer to its next call, so that none is handled in the
 * moments before the stop and after the continue (the kernel's stop is
 * what holds against a module that unblocks them: it shares the worker's
 * memory). The worker called after this one last time is woken ahead,
 * while this one runs, and stopped again once it answered: on a virtual
 * machine, a process with large mappings that has slept through the
 * other modules' runs takes about a millisecond to wake, which the
 * warm-up moves off the pipeline's path (docs/benchmarks.md). A call
 * starts on the CPU its caller names, where its input was just written:
 * the server lets the stopped worker wake only there, and the worker,
 * once running, takes back the CPUs it was forked with, so that its
 * module's threads and the kernel's balancing are as for any process (a
 * running task is not moved to an idle CPU, one waiting is). Until it
 * first runs there it cannot be moved: a call whose CPU something else
 * holds waits for it, within its deadline. Otherwise, on two CPUs, the
 * kernel often woke a worker on the idle one, whose cache holds none of
 * the input, and the modules ran about 10 % slower than in one process.
 * A warm-up runs wherever the kernel puts it. It keeps
 * no descriptor between calls but its socket and 0-2,
 * so a module cannot keep a batch's descriptor for later. A worker that
 * failed a call, or whose module left a thread running after one, is
 * ended, so nothing a failed or misbehaving run left behind meets the
 * next batch. */
#define _GNU_SOURCE /* syscall, sched_setaffinity */
#include "platform_workers_posix.h"

#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/socket.h>
#include <sys/stat.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif
#include <sys/wait.h>
#include <unistd.h>

#include "platform_msg_posix.h"

typedef struct worker {
    char key[PLAT_MAX_KEY];
    pid_t pid;
    int live;       /* 0: a free entry */
    int sock;       /* the server's end */
    uint32_t calls; /* served so far */
    uint64_t used;  /* when last called, as a count of calls */
    struct worker *next; /* the worker called after this one, last time */
#ifdef __linux__
    cpu_set_t home; /* its CPUs, as note_home() read them; the worker has
                       its own copy of its entry */
    int home_known;
#endif
} worker;

/* What a worker sends back: whether it serves on, where the call started
 * and the result; or WARMED alone, its answer to a warm-up. */
typedef struct work_answer {
    int32_t keep;
    int32_t started_on; /* read while the worker could run nowhere else */
    uint8_t result[PLAT_MAX_RESULT];
} work_answer;

#define ANSWER_HEAD offsetof(work_answer, result)

/* A warm-up: a work_hdr with this req_len, and no request. */
#define WARM_UP UINT32_MAX
#define WARMED 2

static worker workers[PLAT_MAX_WORKERS];
static uint64_t clock_calls;
static worker *last_called;
/* Woken ahead and not yet stopped again: set only while a call is
 * collected (never the called worker), and cleared before anything could
 * end its worker. */
static worker *warming;

/* Notes in w the CPUs its worker may use beyond the start of a call: those
 * the server may use, and the kernel has online, as it forks the worker.
 * Unknown (not Linux, more CPUs than a cpu_set_t holds): none of its calls
 * is placed. */
static void note_home(worker *w) {
#ifdef __linux__
    w->home_known = sched_getaffinity(0, sizeof w->home, &w->home) == 0;
#else
    (void)w;
#endif
}

/* ---- in the worker ---- */

/* A placed call has started on its CPU (the server sends PLAT_CPU_ANY
 * for one it could not place): from here on the worker (self, its copy of
 * its entry) may run, and its module's threads start, on any of its own
 * CPUs again. Returns the CPU it started on, read while it could run on
 * no other, so exact. */
static int32_t go_home(const worker *self) {
#ifdef __linux__
    int32_t started_on = sched_getcpu();
    if (self->home_known)
        sched_setaffinity(0, sizeof self->home, &self->home);
    return started_on;
#else
    (void)self;
    return PLAT_CPU_ANY;
#endif
}

/* Signal masks as Linux keeps them: all 64 signals. glibc's sigprocmask
 * would leave out the two it keeps for itself (32 and 33), at which a
 * module could still aim a timer. */
#ifdef __linux__
typedef uint64_t sigmask;
static void set_mask(int how, const sigmask *set, sigmask *old) {
    syscall(SYS_rt_sigprocmask, how, set, old, sizeof *set);
}
static sigmask every_signal(void) {
    return ~(sigmask)0;
}
static sigmask without(sigmask m, int sig) {
    return m & ~((sigmask)1 << (sig - 1));
}
#else
typedef sigset_t sigmask;
static void set_mask(int how, const sigmask *set, sigmask *old) {
    sigprocmask(how, set, old);
}
static sigmask every_signal(void) {
    sigmask m;
    sigfillset(&m);
    return m;
}
static sigmask without(sigmask m, int sig) {
    sigdelset(&m, sig);
    return m;
}
#endif

static void serve_calls(const worker *self, int sock, plat_child_fn fn) {
    static uint8_t buf[sizeof(work_hdr) + PLAT_MAX_REQ];
    static work_answer ans;
    sigmask all = every_signal(), during_call;
    set_mask(SIG_BLOCK, &all, &during_call);
    during_call = without(during_call, SIGALRM); /* the watchdog */
    for (;;) {
        int fds[PLAT_MAX_FDS], nfds = 0;
        ssize_t n = msg_recv(sock, buf, sizeof buf, fds, &nfds);
        if (n < (ssize_t)sizeof(work_hdr))
            _exit(0); /* the server is gone */
        work_hdr h;
        memcpy(&h, buf, sizeof h);
        if (h.req_len == WARM_UP) {
            ans.keep = WARMED;
            if (msg_send(sock, &ans, sizeof ans.keep, NULL, 0, NULL, 0))
                _exit(0);
            continue;
        }
        ans.started_on = h.cpu != PLAT_CPU_ANY ? go_home(self) : PLAT_CPU_ANY;
        int keep = 0;
        size_t len = 0;
        alarm((h.lim.timeout_ms + 999) / 1000);
        set_mask(SIG_SETMASK, &during_call, NULL);
        if ((size_t)n == sizeof h + h.req_len)
            len = fn(buf + sizeof h, h.req_len, fds, nfds, &h.lim, ans.result, &keep);
        alarm(0); /* first, so that no alarm is held for the next call */
        set_mask(SIG_BLOCK, &all, NULL);
        fds_close_all_but(sock); /* the call's, and any the module made */
        ans.keep = keep;
        if (msg_send(sock, &ans, ANSWER_HEAD + len, NULL, 0, NULL, 0) || !keep)
            _exit(0);
    }
}

/* The new worker holds no descriptor but its socket and 0-2: not the
 * server's, no other worker's, and not the batches of the call it was
 * forked for (they come again with the call). */
static void become_worker(const worker *self, int sock, pid_t server,
                          plat_child_fn fn) {
    static const int fatal[] = {SIGALRM, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
#ifdef __linux__
    /* a stopped worker would never see its server's end on the socket */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    if (getppid() != server)
        _exit(0);
    for (size_t k = 0; k < sizeof fatal / sizeof fatal[0]; k++)
        signal(fatal[k], SIG_DFL); /* a module dies of its own faults */
    fds_close_all_but(sock);
    serve_calls(self, sock, fn);
}

/* ---- in the server ---- */

static worker *find(const char *key) {
    for (int k = 0; k < PLAT_MAX_WORKERS; k++)
        if (workers[k].live && strcmp(workers[k].key, key) == 0)
            return &workers[k];
    return NULL;
}

/* Kills and reaps w's process and frees w: its exit status, or 0. It is
 * killed even when it should be ending by itself, since a module that
 * closed its socket could otherwise spin on past any deadline. */
static int retire(worker *w) {
    int status = 0;
    kill(w->pid, SIGKILL);
    close(w->sock);
    while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR)
        ;
    w->live = 0;
    return status;
}

/* A free entry, or the least recently called worker's, ended. */
static worker *free_entry(void) {
    worker *oldest = &workers[0];
    for (int k = 0; k < PLAT_MAX_WORKERS; k++) {
        if (!workers[k].live)
            return &workers[k];
        if (workers[k].used < oldest->used)
            oldest = &workers[k];
    }
    retire(oldest);
    return oldest;
}

static worker *spawn(const char *key, plat_child_fn fn) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        return NULL;
    worker *w = free_entry();
    note_home(w);
    pid_t server = getpid(), pid = fork();
    if (pid == 0) {
        become_worker(w, sv[1], server, fn);
    }
    close(sv[1]);
    if (pid < 0) {
        close(sv[0]);
        return NULL;
    }
    snprintf(w->key, sizeof w->key, "%s", key);
    w->pid = pid, w->sock = sv[0], w->calls = 0, w->live = 1, w->next = NULL;
    return w;
}

/* Threads the worker has now (2 links of /proc/PID/task are . and ..);
 * -1 when unknown. */
static int threads_of(pid_t pid) {
    char path[64];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    return stat(path, &st) == 0 ? (int)st.st_nlink - 2 : -1;
}

static void end_of(int status, answer *a) {
    if (WIFSIGNALED(status)) {
        a->out.status = WTERMSIG(status);
        a->out.end = a->out.status == SIGALRM ? PLAT_END_TIMEOUT : PLAT_END_SIGNAL;
    } else {
        a->out.status = WEXITSTATUS(status);
        a->out.end = PLAT_END_NORESULT;
    }
}

/* One datagram from w into ans: its length, 0 or less when w is gone.
 * A worker sends no descriptors; any it did are closed. */
static ssize_t read_answer(worker *w, work_answer *ans) {
    int none[PLAT_MAX_FDS], n0 = 0;
    ssize_t n = msg_recv(w->sock, ans, sizeof *ans, none, &n0);
    for (int k = 0; k < n0; k++)
        close(none[k]);
    return n;
}

static int is_warmed(const work_answer *ans, ssize_t n) {
    return n == (ssize_t)sizeof ans->keep && ans->keep == WARMED;
}

/* Lets w, stopped or waiting for its call, wake only on cpu; it goes
 * home once running (go_home()). Whether it did: a CPU not among its own,
 * or one the system will not place it on (not Linux, a changed cpuset),
 * leaves it to wake where it could before, since a placement is a help,
 * never a condition of the call. */
static int place(worker *w, int cpu) {
#ifdef __linux__
    if (cpu == PLAT_CPU_ANY || !w->home_known || !CPU_ISSET_S(cpu, sizeof w->home, &w->home))
        return 0;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return sched_setaffinity(w->pid, sizeof one, &one) == 0;
#else
    (void)w, (void)cpu;
    return 0;
#endif
}

/* Wakes w ahead of its likely call (warm_up answers WARMED), wherever the
 * kernel puts it. settle_warm() stops it again. */
static void warm_up(worker *w) {
    static const work_hdr hdr = {.req_len = WARM_UP, .cpu = PLAT_CPU_ANY};
    if (msg_send(w->sock, &hdr, sizeof hdr, NULL, 0, NULL, 0) == 0 &&
        kill(w->pid, SIGCONT) == 0)
        warming = w;
}

/* Stops the warmed worker again until its call, reading its answer to the
 * warm-up when it came (answered); one still to come is skipped by its
 * call's collect(). A worker that answered anything else is ended. */
static void settle_warm(int answered) {
    static work_answer ans;
    worker *w = warming;
    warming = NULL;
    if (answered && !is_warmed(&ans, read_answer(w, &ans)))
        retire(w);
    else
        kill(w->pid, SIGSTOP);
}

/* Waits for w's answer until the deadline, settling a warm-up on the way;
 * a worker gone or late is retired and a says how it ended. */
static void wait_answer(worker *w, uint64_t deadline, answer *a) {
    static work_answer ans;
    for (;;) {
        uint64_t now = plat_now_ms();
        struct pollfd p[2] = {{w->sock, POLLIN, 0}, {warming ? warming->sock : -1, POLLIN, 0}};
        int r = now >= deadline ? 0 : poll(p, 2, (int)(deadline - now));
        if (r < 0 && errno == EINTR)
            continue;
        if (r > 0 && p[1].revents)
            settle_warm(1);
        if (r > 0 && !p[0].revents)
            continue;
        if (r == 0) {
            retire(w);
            a->out.end = PLAT_END_TIMEOUT;
            return;
        }
        ssize_t n = read_answer(w, &ans);
        if (is_warmed(&ans, n))
            continue; /* to a warm-up it was stopped before answering */
        if (n < (ssize_t)ANSWER_HEAD) {
            end_of(retire(w), a);
            return;
        }
        a->out.end = PLAT_END_RESULT;
        a->out.started_on = ans.started_on;
        a->out.result_len = (size_t)n - ANSWER_HEAD;
        memcpy(a->result, ans.result, a->out.result_len);
        if (!ans.keep || threads_of(w->pid) != 1)
            retire(w);
        else
            kill(w->pid, SIGSTOP);
        return;
    }
}

/* wait_answer(), and the worker woken ahead stopped again whether or not
 * it answered yet: none runs between calls but the one called. */
static void collect(worker *w, uint64_t deadline, answer *a) {
    assert(warming != w);
    wait_answer(w, deadline, a);
    if (warming)
        settle_warm(0);
}

/* Learns the order of calls (w follows the last one called) and wakes the
 * worker that followed w last time, so that it is ready when its call
 * comes (see the top of the file). */
static void warm_next(worker *w) {
    assert(!warming); /* the last collect() settled it */
    if (last_called && last_called != w)
        last_called->next = w;
    last_called = w;
    if (w->next && w->next != w && w->next->live)
        warm_up(w->next);
}

/* Retires the workers that died between calls (killed from outside). */
static void reap_dead(void) {
    for (int k = 0; k < PLAT_MAX_WORKERS; k++)
        if (workers[k].live && waitpid(workers[k].pid, NULL, WNOHANG) == workers[k].pid) {
            close(workers[k].sock);
            workers[k].live = 0;
        }
}

/* Wakes w (stopped since its last call) on the call's CPU, where it can,
 * and sends it the call. */
static int send_call(worker *w, const work_hdr *h, const uint8_t *req,
                     const int *fds, int nfds) {
    work_hdr sent = *h;
    if (!place(w, h->cpu))
        sent.cpu = PLAT_CPU_ANY; /* nothing for the worker to undo */
    kill(w->pid, SIGCONT);
    return msg_send(w->sock, &sent, sizeof sent, req, h->req_len, fds, nfds);
}

void workers_call(plat_child_fn fn, const char *key, const work_hdr *h,
                  const uint8_t *req, const int *fds, int nfds, answer *a) {
    memset(a, 0, sizeof *a);
    a->out.started_on = PLAT_CPU_ANY;
    uint64_t t0 = plat_now_ms();
    reap_dead();
    worker *w = find(key);
    /* a worker that died just now: the call goes to a new one */
    if (w && send_call(w, h, req, fds, nfds)) {
        retire(w);
        w = NULL;
    }
    if (!w) {
        w = spawn(key, fn);
        if (!w || send_call(w, h, req, fds, nfds)) {
            a->out.end = PLAT_END_SPAWN, a->out.status = errno;
            if (w)
                retire(w);
            a->out.ms = (uint32_t)(plat_now_ms() - t0);
            return;
        }
    }
    w->used = ++clock_calls;
    a->out.calls = ++w->calls;
    warm_next(w);
    collect(w, t0 + h->lim.timeout_ms, a);
    a->out.ms = (uint32_t)(plat_now_ms() - t0);
}

void workers_end_all(void) {
    for (int k = 0; k < PLAT_MAX_WORKERS; k++)
        if (workers[k].live)
            retire(&workers[k]);
}
