/* exec_proc.c -- what aegisd and the watcher learn of a process from
 * /proc (alive with the same start time, its session, its parent, its
 * name), and the signal that reaches a whole job. */
#include "exec.h"
#include "exec_priv.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Field 3 (state), 4 (parent), 6 (session) and 22 (starttime) of
 * /proc/PID/stat; the command name (field 2) may hold spaces and
 * parentheses, so parse after its last ')'. */
int exec_proc_stat(pid_t pid, char *state, unsigned long long *start,
                   pid_t *session, pid_t *parent) {
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    int ppid, pgrp, sid;
    if (!p || sscanf(p + 2, "%c %d %d %d", state, &ppid, &pgrp, &sid) != 4)
        return -1;
    *session = sid;
    *parent = ppid;
    /* p at ")"; the k-th space after it opens field 2 + k: go to 22 */
    for (int field = 3; field <= 22 && p; field++) p = strchr(p + 1, ' ');
    if (!p || sscanf(p + 1, "%llu", start) != 1) return -1;
    return 0;
}

unsigned long long exec_start_time(pid_t pid) {
    char state;
    unsigned long long start;
    pid_t sid, ppid;
    if (pid <= 0 || exec_proc_stat(pid, &state, &start, &sid, &ppid) != 0 ||
        state == 'Z' || state == 'X')
        return 0;
    return start;
}

bool exec_alive(pid_t pid, unsigned long long start) {
    return start != 0 && exec_start_time(pid) == start;
}

pid_t exec_session(pid_t pid) {
    char state;
    unsigned long long start;
    pid_t sid, ppid;
    return exec_proc_stat(pid, &state, &start, &sid, &ppid) == 0 ? sid : -1;
}

bool exec_in_job(pid_t pid, pid_t job_pid) {
    return exec_session(pid) == job_pid;
}

pid_t exec_parent(pid_t pid) {
    char state;
    unsigned long long start;
    pid_t sid, ppid;
    return exec_proc_stat(pid, &state, &start, &sid, &ppid) == 0 ? ppid : -1;
}

bool exec_leads_job(pid_t job_pid, pid_t shim_pid,
                    unsigned long long shim_start) {
    return job_pid > 1 && exec_parent(job_pid) == shim_pid &&
           exec_alive(shim_pid, shim_start);
}

bool exec_watcher_may_have_ended(pid_t shim_pid, const pid_t *reaped,
                                 size_t n) {
    if (shim_pid <= 0) return true;
    for (size_t i = 0; i < n; i++)
        if (reaped[i] == shim_pid) return true;
    return false;
}

bool exec_named(pid_t pid, const char *name) {
    char path[64], comm[64];
    snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t n = read(fd, comm, sizeof(comm) - 1);
    close(fd);
    if (n <= 0) return false;
    comm[n] = '\0';
    comm[strcspn(comm, "\n")] = '\0';
    return strcmp(comm, name) == 0;
}

void exec_kill(pid_t job_pid, int sig) {
    if (job_pid > 1) kill(-job_pid, sig);
}
