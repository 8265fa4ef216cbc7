/* gpushare.c -- what each GPU's sharing mode asks of aegisd (sharing.h
 * holds the settings): an MPS control daemon per mps GPU, started at
 * aegisd's start and stopped at its stop, and the environment that makes
 * a job an MPS client.
 *
 * The one idea: a control daemon belongs to its GPU, not to aegisd's
 * life. aegisd stops it at shutdown only when no job of that GPU still
 * runs (SIGTERM leaves jobs running), and a restarted aegisd that finds
 * one answering on the GPU's pipe keeps it instead of starting another:
 * so each GPU's daemon is started once and stopped once, whatever happens
 * to aegisd in between.
 */
#include "daemon.h"

#include "mps.h"
#include "tel_mig.h"

#include <stdio.h>
#include <string.h>

/* GPU g's control-daemon invocation; pipe and log hold its folders. */
static mps_target d_share_mps_target(const d_daemon *d, int g, char *pipe_dir,
                                     char *log_dir, size_t len) {
    sharing_mps_dirs(d->mps_dir, g, pipe_dir, log_dir, len);
    mps_target t = {d->share.mps_control, tel_gpu_uuid(d->tel, g), pipe_dir,
                    log_dir};
    return t;
}

static int d_share_mps_up(d_daemon *d, int g, char *err, size_t errlen) {
    char pipe_dir[4200], log_dir[4200];
    mps_target t = d_share_mps_target(d, g, pipe_dir, log_dir,
                                      sizeof(pipe_dir));
    if (mps_running(pipe_dir)) {
        d_log("GPU %d: MPS control daemon already running on %s: kept", g,
              pipe_dir);
    } else if (mps_start(&t, err, errlen) != 0) {
        return -1;
    } else {
        d_log("GPU %d: MPS control daemon started (pipe %s, log %s)", g,
              pipe_dir, log_dir);
    }
    d->gpus[g].mps_up = true;
    return 0;
}

/* Running jobs with GPU g among their GPUs. */
static int d_share_jobs_on(const d_daemon *d, int g) {
    int n = 0;
    for (size_t i = 0; i < d->njobs; i++) {
        const d_job *job = d->jobs[i];
        for (int k = 0; job->state == D_RUNNING && k < job->ngpus; k++)
            n += job->gpus[k] == g;
    }
    return n;
}

static void d_share_mps_down(d_daemon *d, int g) {
    char pipe_dir[4200], log_dir[4200], err[1024];
    mps_target t = d_share_mps_target(d, g, pipe_dir, log_dir,
                                      sizeof(pipe_dir));
    if (mps_stop(&t, err, sizeof(err)) == 0)
        d_log("GPU %d: MPS control daemon stopped", g);
    else
        d_log("GPU %d: MPS control daemon not stopped: %s", g, err);
    d->gpus[g].mps_up = false;
}

/* Whether mode `m` can run on GPU g: mig and auto need MIG mode on. */
static int d_share_check_mode(d_daemon *d, int g, share_mode m, char *err,
                              size_t errlen) {
    if (m != SHARE_MIG && m != SHARE_AUTO) return 0;
    char why[512] = "";
    int on = tel_mig_enabled(d->tel, g, why, sizeof(why));
    if (on == 1) return 0;
    if (on < 0)
        snprintf(err, errlen, "sharing: GPU %d is %s: %s", g,
                 share_mode_name(m), why);
    else
        snprintf(err, errlen, "sharing: GPU %d is %s, but its MIG mode is off "
                 "or it has no MIG (turn it on with nvidia-smi -i %d -mig 1 "
                 "on an idle GPU)", g, share_mode_name(m), g);
    return -1;
}

/* Checks share against the GPUs: indexes, and MIG mode where needed. */
static int d_share_check(d_daemon *d, const sharing_config *share,
                         const char *path, char *err, size_t errlen) {
    if (sharing_check_gpus(share, d->ngpus, path, err, errlen) != 0)
        return -1;
    for (int g = 0; g < d->ngpus; g++)
        if (d_share_check_mode(d, g, sharing_mode(share, g), err, errlen) != 0)
            return -1;
    return 0;
}

static const char *d_share_config_path(const d_daemon *d) {
    return d->opt.config_path ? d->opt.config_path : "aegis.yaml";
}

int d_share_open(d_daemon *d) {
    char err[1024];
    if (d->share.mps_dir[0])
        snprintf(d->mps_dir, sizeof(d->mps_dir), "%s", d->share.mps_dir);
    else
        snprintf(d->mps_dir, sizeof(d->mps_dir), "%s/mps", d->opt.state_dir);
    if (d_share_check(d, &d->share, d_share_config_path(d), err,
                      sizeof(err)) != 0) {
        d_log("%s", err);
        return -1;
    }
    for (int g = 0; g < d->ngpus; g++) {
        d->gpus[g].mode = sharing_mode(&d->share, g);
        if (d->gpus[g].mode == SHARE_MPS &&
            d_share_mps_up(d, g, err, sizeof(err)) != 0) {
            d_log("GPU %d: sharing mps: %s", g, err);
            return -1;
        }
    }
    return 0;
}

void d_share_close(d_daemon *d) {
    for (int g = 0; g < d->ngpus; g++) {
        if (!d->gpus[g].mps_up) continue;
        int busy = d_share_jobs_on(d, g);
        if (busy > 0)
            d_log("GPU %d: MPS control daemon left running for its %d "
                  "running job%s; the next aegisd keeps it", g, busy,
                  busy > 1 ? "s" : "");
        else
            d_share_mps_down(d, g);
    }
}

int d_share_check_reload(d_daemon *d, const sharing_config *share,
                         char *err, size_t errlen) {
    if (strcmp(share->mps_dir, d->share.mps_dir) != 0 ||
        strcmp(share->mps_control, d->share.mps_control) != 0) {
        snprintf(err, errlen, "mps_dir and mps_control take effect at the "
                 "next start only");
        return -1;
    }
    return d_share_check(d, share, d_share_config_path(d), err, errlen);
}

void d_share_reload(d_daemon *d, const sharing_config *share) {
    char err[1024];
    for (int g = 0; g < d->ngpus; g++) {
        share_mode m = sharing_mode(share, g);
        if (m == d->gpus[g].mode) continue;
        d_log("GPU %d: sharing %s -> %s", g, share_mode_name(d->gpus[g].mode),
              share_mode_name(m));
        if (d->gpus[g].mps_up) d_share_mps_down(d, g);
        d->gpus[g].mode = m;
        if (m == SHARE_MPS && d_share_mps_up(d, g, err, sizeof(err)) != 0)
            d_log("GPU %d: sharing mps: %s", g, err);
    }
    d->share = *share;
}

void d_share_job_env(const d_daemon *d, const core_launch *l,
                     const char **vars, size_t nvars, char *buf,
                     size_t buflen, char *note, size_t notelen) {
    size_t nv = 0, at = 0;
    vars[0] = NULL;
    note[0] = '\0';
    /* MPS is per GPU here, and a process has one pipe folder: a job of
     * several GPUs runs as a plain CUDA process, time-sliced beside them. */
    if (l->num_gpus != 1 || !d->gpus[l->gpus[0]].mps_up || nvars < 4)
        return;
    char pipe_dir[4200], log_dir[4200], text[3][4300];
    sharing_mps_dirs(d->mps_dir, l->gpus[0], pipe_dir, log_dir,
                     sizeof(pipe_dir));
    int n = 0;
    snprintf(text[n++], sizeof(text[0]), "CUDA_MPS_PIPE_DIRECTORY=%s",
             pipe_dir);
    snprintf(text[n++], sizeof(text[0]), "CUDA_MPS_LOG_DIRECTORY=%s", log_dir);
    /* The floor is what the core admitted the job with: MPS makes a job
     * that outgrows it fail alone, as an OOM that climbs the ladder,
     * instead of crowding its neighbours out. Alone it may use it all. */
    bool pinned = d->share.mps_pin_memory && !l->exclusive &&
                  l->floor_mib > 0;
    if (pinned)
        snprintf(text[n++], sizeof(text[0]),
                 "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=%.0fM", l->floor_mib);
    snprintf(note, notelen, "MPS client of GPU %d's control daemon%s",
             l->gpus[0], pinned ? ", memory pinned at its floor" : "");
    for (int i = 0; i < n; i++) {
        size_t len = strlen(text[i]) + 1;
        if (at + len > buflen) break;
        memcpy(buf + at, text[i], len);
        vars[nv++] = buf + at;
        at += len;
    }
    vars[nv] = NULL;
}
