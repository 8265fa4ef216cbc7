/* gpushare.c -- what each GPU's sharing mode asks of aegisd (sharing.h
 * holds the settings): an MPS control daemon per mps or auto GPU, started
 * at aegisd's start and stopped at its stop, the environment that makes a
 * job an MPS client, and the MIG instance of a job the core placed in one
 * (created at launch, destroyed when the attempt ends, recorded in the
 * store in between so a restart neither loses nor leaks it).
 *
 * The one idea: a control daemon belongs to its GPU, not to aegisd's
 * life. aegisd stops it at shutdown only when no job of that GPU still
 * runs (SIGTERM leaves jobs running), and a restarted aegisd that finds
 * one answering on the GPU's pipe keeps it instead of starting another:
 * so each GPU's daemon is started once and stopped once, whatever happens
 * to aegisd in between.
 */
#include "daemon.h"

#include "config.h"
#include "mps.h"
#include "tel_mig.h"

#include <stdio.h>
#include <string.h>

/* MIG instances recorded at once at most: 7 per GPU. */
#define D_SHARE_MAX_MIG (CORE_MAX_GPUS * 7)

/* Modes whose jobs may run as MPS clients: auto sends whole-GPU jobs to
 * MPS. */
static bool d_share_uses_mps(share_mode m) {
    return m == SHARE_MPS || m == SHARE_AUTO;
}

/* Modes whose jobs may run in MIG instances. */
static bool d_share_uses_mig(share_mode m) {
    return m == SHARE_MIG || m == SHARE_AUTO;
}

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

/* The first GPU whose MPS control daemon runs, or -1: warnings about the
 * MPS folder, shared by every GPU, are given once. */
static int d_share_first_mps(const d_daemon *d) {
    for (int g = 0; g < d->ngpus; g++)
        if (d->gpus[g].mps_up) return g;
    return -1;
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

/* Whether mode `m` can run on GPU g: mig and auto need a GPU with MIG
 * (a table for its model, the NVML calls); aegisd turns MIG mode on and
 * off itself, as jobs need. */
static int d_share_check_mode(d_daemon *d, int g, share_mode m, char *err,
                              size_t errlen) {
    if (!d_share_uses_mig(m)) return 0;
    char why[512] = "";
    const char *name = tel_gpu_name(d->tel, g);
    if (!mig_model_find(name))
        snprintf(err, errlen, "sharing: GPU %d is %s, but aegis has no MIG "
                 "table for its model (%s)", g, share_mode_name(m), name);
    else if (!tel_mig_supported(d->tel))
        snprintf(err, errlen, "sharing: GPU %d is %s, but the NVML library "
                 "has no MIG calls (a driver older than 470?)", g,
                 share_mode_name(m));
    else if (tel_mig_enabled(d->tel, g, why, sizeof(why)) < 0)
        snprintf(err, errlen, "sharing: GPU %d is %s: %s", g,
                 share_mode_name(m), why);
    else
        return 0;
    return -1;
}

/* Checks share against the GPUs: indexes, and MIG mode where needed. A
 * mode a GPU cannot run is named by the line of path that gave it, as the
 * file's other errors are. */
static int d_share_check(d_daemon *d, const sharing_config *share,
                         const char *path, char *err, size_t errlen) {
    if (sharing_check_gpus(share, d->ngpus, path, err, errlen) != 0)
        return -1;
    for (int g = 0; g < d->ngpus; g++) {
        char why[768];
        if (d_share_check_mode(d, g, sharing_mode(share, g), why,
                               sizeof(why)) == 0)
            continue;
        snprintf(err, errlen, "%s:%d: %s", path, sharing_mode_line(share, g),
                 why);
        return -1;
    }
    return 0;
}

/* tel_mig's answer as d_share_prepare gives it. */
static int d_share_answer(int tel_rc) {
    return tel_rc == 0 ? 0 : tel_rc == TEL_MIG_BUSY ? D_SHARE_BUSY : -1;
}

/* Turns GPU g's MIG mode on or off when it is not so already, noting it
 * in the daemon's log. 0, -1, or D_SHARE_BUSY while processes hold it. */
static int d_share_mig_mode(d_daemon *d, int g, bool on, char *err,
                            size_t errlen) {
    int now = tel_mig_enabled(d->tel, g, err, errlen);
    if (now < 0) return -1;
    if (now == on) return 0;
    int rc = d_share_answer(tel_mig_set_mode(d->tel, g, on, err, errlen));
    if (rc == 0) d_log("GPU %d: MIG mode turned %s", g, on ? "on" : "off");
    return rc;
}

static const char *d_share_config_path(const d_daemon *d) {
    return d->opt.config_path ? d->opt.config_path : CONFIG_DEFAULT_PATH;
}

/* Whether every MIG instance on GPU g is one the store says aegisd made:
 * the core plans a mig or auto GPU's slices as if it held nothing else,
 * so an instance made by hand would make its placements fail. 0, or -1
 * naming the first stranger. */
static int d_share_check_instances(d_daemon *d, int g, char *err,
                                   size_t errlen) {
    static store_mig rows[D_SHARE_MAX_MIG];
    tel_mig_dev devs[TEL_MIG_MAX_DEVS];
    int ndev = tel_mig_list(d->tel, g, devs, TEL_MIG_MAX_DEVS, err, errlen);
    if (ndev < 0) return -1;
    int nrow = store_mig_list(d->st, rows, D_SHARE_MAX_MIG);
    for (int i = 0; i < ndev; i++) {
        bool ours = false;
        for (int r = 0; r < nrow && !ours; r++)
            ours = rows[r].gpu == g && rows[r].gi == devs[i].gi_id;
        if (ours) continue;
        snprintf(err, errlen, "GPU %d holds a MIG instance aegisd did not "
                 "make (GPU instance %u at memory slice %u, %s): destroy it "
                 "(nvidia-smi mig -i %d -dci -gi %u; nvidia-smi mig -i %d "
                 "-dgi -gi %u), or give the GPU a mode without MIG", g,
                 devs[i].gi_id, devs[i].start, devs[i].uuid, g, devs[i].gi_id,
                 g, devs[i].gi_id);
        return -1;
    }
    return 0;
}

/* With jobs run as their users (a root aegisd), warns when they cannot
 * reach the MPS folder: the default, DIR/mps, is inside the private state
 * folder. A warning, not a refusal: jobs of root itself still work. */
static void d_share_mps_reach(const d_daemon *d) {
    char blocker[4096];
    int mode;
    if (!d->as_root ||
        !mps_dir_blocked(d->mps_dir, blocker, sizeof(blocker), &mode))
        return;
    d_warn("the MPS folder %s is inside %s (mode %04o), which other "
           "users cannot enter: their jobs on mps and auto GPUs cannot reach "
           "the MPS control daemon and will fail. Set mps_dir in %s to a "
           "folder every user can reach (e.g. /run/aegis-mps)", d->mps_dir,
           blocker, mode, d_share_config_path(d));
}

int d_share_open(d_daemon *d) {
    char err[1024];
    if (d->share.mps_dir[0])
        snprintf(d->mps_dir, sizeof(d->mps_dir), "%s", d->share.mps_dir);
    else
        snprintf(d->mps_dir, sizeof(d->mps_dir), "%s/mps", d->opt.state_dir);
    /* these stop aegisd: errors, as a bad file's are */
    if (d_share_check(d, &d->share, d_share_config_path(d), err,
                      sizeof(err)) != 0) {
        d_error("%s", err);
        return -1;
    }
    for (int g = 0; g < d->ngpus; g++) {
        d_gpu *gpu = &d->gpus[g];
        gpu->mode = sharing_mode(&d->share, g);
        gpu->mig_model = mig_model_find(tel_gpu_name(d->tel, g));
        if (!d_share_uses_mig(gpu->mode) && gpu->mig_model &&
            tel_mig_enabled(d->tel, g, err, sizeof(err)) == 1)
            d_log("GPU %d: MIG mode is on but sharing is %s: CUDA sees no "
                  "whole GPU there; use mig or auto, or turn MIG mode off",
                  g, share_mode_name(gpu->mode));
        if ((d_share_uses_mig(gpu->mode) &&
             d_share_check_instances(d, g, err, sizeof(err)) != 0) ||
            core_gpu_share(d->core, g, gpu->mode, gpu->mig_model, err,
                           sizeof(err)) != 0 ||
            (d_share_uses_mps(gpu->mode) &&
             d_share_mps_up(d, g, err, sizeof(err)) != 0)) {
            d_error("GPU %d: sharing %s: %s", g, share_mode_name(gpu->mode),
                    err);
            return -1;
        }
        if (gpu->mps_up && g == d_share_first_mps(d)) d_share_mps_reach(d);
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
    /* A GPU turning to MPS needs the control program: refused here, the
     * configuration stays whole, rather than GPUs left without MPS. The
     * program is the one aegisd started with: a new mps_control applies
     * at the next start only (d_share_reload). */
    for (int g = 0; g < d->ngpus; g++)
        if (d_share_uses_mps(sharing_mode(share, g)) && !d->gpus[g].mps_up &&
            mps_program_check(d->share.mps_control, err, errlen) != 0)
            return -1;
    return d_share_check(d, share, d_share_config_path(d), err, errlen);
}

/* mps_dir and mps_control name the running control daemons' folders and
 * the program that stops them: changed under them, aegisd could neither
 * reach nor stop those daemons. So a reload keeps both, says so, and
 * applies the rest of the file (as metrics_listen); the next start takes
 * them. */
static void d_share_keep_mps_paths(const d_daemon *d, sharing_config *share) {
    d_keep_for_restart("mps_dir", share->mps_dir, sizeof(share->mps_dir),
                       d->share.mps_dir,
                       share->mps_dir[0] ? share->mps_dir : "STATE_DIR/mps",
                       d->mps_dir);
    d_keep_for_restart("mps_control", share->mps_control,
                       sizeof(share->mps_control), d->share.mps_control,
                       share->mps_control, d->share.mps_control);
}

void d_share_reload(d_daemon *d, const sharing_config *share) {
    char err[1024];
    for (int g = 0; g < d->ngpus; g++) {
        d_gpu *gpu = &d->gpus[g];
        share_mode m = sharing_mode(share, g);
        if (m == gpu->mode) continue;
        /* the core changes a mode only on a GPU without jobs */
        if (core_gpu_share(d->core, g, m, gpu->mig_model, err,
                           sizeof(err)) != 0) {
            d_log("GPU %d: sharing stays %s (reload again once it is idle): "
                  "%s", g, share_mode_name(gpu->mode), err);
            continue;
        }
        /* MPS first: a GPU whose control daemon does not start keeps its
         * old mode, whole, instead of a mode it cannot give. */
        bool mps_new = d_share_uses_mps(m) && !gpu->mps_up;
        if (mps_new && d_share_mps_up(d, g, err, sizeof(err)) != 0) {
            char why[1024];
            if (core_gpu_share(d->core, g, gpu->mode, gpu->mig_model, why,
                               sizeof(why)) != 0)
                d_log("GPU %d: %s", g, why);
            d_log("GPU %d: sharing stays %s (the MPS control daemon did not "
                  "start): %s", g, share_mode_name(gpu->mode), err);
            continue;
        }
        d_log("GPU %d: sharing %s -> %s", g, share_mode_name(gpu->mode),
              share_mode_name(m));
        /* idle (the core took the change): whole-GPU jobs need MIG off */
        if (d_share_uses_mig(gpu->mode) && !d_share_uses_mig(m) &&
            d_share_mig_mode(d, g, false, err, sizeof(err)) != 0)
            d_log("GPU %d: %s", g, err);
        if (gpu->mps_up && !d_share_uses_mps(m)) d_share_mps_down(d, g);
        gpu->mode = m;
        if (mps_new && g == d_share_first_mps(d)) d_share_mps_reach(d);
    }
    sharing_config kept = *share;
    d_share_keep_mps_paths(d, &kept);
    d->share = kept;
}

/* The MPS variables of a job launched as a client of GPU g's daemon. MPS
 * is per GPU here, and a process has one pipe folder: a job of several
 * GPUs runs as a plain CUDA process, time-sliced beside the clients. */
static void d_share_mps_env(const d_daemon *d, const core_launch *l,
                            int threads_pct, d_share_start *out) {
    int g = l->gpus[0], n = 0;
    if (l->num_gpus != 1 || l->share[0] != SHARE_MPS || !d->gpus[g].mps_up)
        return;
    char pipe_dir[4200], log_dir[4200];
    size_t len = sizeof(out->env_buf[0]);
    sharing_mps_dirs(d->mps_dir, g, pipe_dir, log_dir, sizeof(pipe_dir));
    snprintf(out->env_buf[n++], len, "CUDA_MPS_PIPE_DIRECTORY=%s", pipe_dir);
    snprintf(out->env_buf[n++], len, "CUDA_MPS_LOG_DIRECTORY=%s", log_dir);
    /* The floor is what the core admitted the job with: MPS makes a job
     * that outgrows it fail alone, as an OOM that climbs the ladder,
     * instead of crowding its neighbours out. Alone it may use it all. */
    bool pinned = d->share.mps_pin_memory && !l->exclusive &&
                  l->floor_mib > 0;
    if (pinned)
        snprintf(out->env_buf[n++], len,
                 "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=%.0fM", l->floor_mib);
    if (threads_pct > 0)
        snprintf(out->env_buf[n++], len,
                 "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d", threads_pct);
    for (int i = 0; i < n; i++) out->env[i] = out->env_buf[i];
    out->env[n] = NULL;
    snprintf(out->note, sizeof(out->note), "MPS client of GPU %d's control "
             "daemon%s", g, pinned ? ", memory pinned at its floor" : "");
    if (threads_pct > 0)
        snprintf(out->note + strlen(out->note),
                 sizeof(out->note) - strlen(out->note),
                 ", %d%% of its threads", threads_pct);
}

/* Makes the job's MIG instance on l->gpus[0]. */
static int d_share_mig_create(d_daemon *d, d_job *job, const core_launch *l,
                              d_share_start *out, char *err, size_t errlen) {
    int g = l->gpus[0];
    tel_mig_dev dev;
    int rc = d_share_mig_mode(d, g, true, err, errlen);
    if (rc == 0)
        rc = d_share_answer(tel_mig_create(d->tel, g, l->mig->nvml_profile,
                                           (unsigned int)l->mig_start,
                                           (unsigned int)l->mig->mem_slices,
                                           &dev, err, errlen));
    if (rc != 0) return rc;
    job->mig = l->mig;
    job->mig_start = l->mig_start;
    job->mig_gi = dev.gi_id;
    job->mig_ci = dev.ci_id;
    store_mig m = {.gpu = g, .gi = dev.gi_id, .ci = dev.ci_id,
                   .job_id = job->id, .n = job->attempts + 1,
                   .start = l->mig_start};
    snprintf(m.profile, sizeof(m.profile), "%s", l->mig->name);
    snprintf(m.uuid, sizeof(m.uuid), "%s", dev.uuid);
    store_mig_add(d->st, &m);
    snprintf(out->visible, sizeof(out->visible), "%s", dev.uuid);
    snprintf(out->note, sizeof(out->note), "MIG instance %s created at "
             "memory slice %d of GPU %d (GPU instance %u, compute instance "
             "%u): %s", l->mig->name, l->mig_start, g, dev.gi_id, dev.ci_id,
             dev.uuid);
    return 0;
}

int d_share_prepare(d_daemon *d, d_job *job, const core_launch *l,
                    int mps_threads_pct, d_share_start *out, char *err,
                    size_t errlen) {
    memset(out, 0, sizeof(*out));
    if (l->share[0] == SHARE_MIG && l->mig)
        return d_share_mig_create(d, job, l, out, err, errlen);
    /* A whole-GPU job on a GPU that runs MIG instances at other times:
     * CUDA sees no whole GPU while MIG mode is on. The core sends one only
     * to a GPU without instances. */
    for (int k = 0; k < l->num_gpus; k++) {
        share_mode m = d->gpus[l->gpus[k]].mode;
        int rc = d_share_uses_mig(m)
                     ? d_share_mig_mode(d, l->gpus[k], false, err, errlen)
                     : 0;
        if (rc != 0) return rc;
    }
    d_share_mps_env(d, l, mps_threads_pct, out);
    return 0;
}

void d_share_release(d_daemon *d, d_job *job) {
    if (!job->mig) return;
    char err[1024];
    int g = job->gpus[0];
    if (tel_mig_destroy(d->tel, g, job->mig_gi, job->mig_ci, err,
                        sizeof(err)) != 0) {
        /* kept in the store: retried each tick, and at the next start */
        d->mig_leftover = true;
        d_log("job %lld: MIG instance not destroyed yet (retried until its "
              "processes are gone): %s", (long long)job->id, err);
        store_event(d->st, job->id, d_wall(), "attempt %d: MIG instance %s "
                    "not destroyed yet, retried until its processes are "
                    "gone: %s", job->attempts, job->mig->name, err);
    } else {
        store_mig_remove(d->st, g, job->mig_gi);
        store_event(d->st, job->id, d_wall(), "attempt %d: MIG instance %s "
                    "destroyed (GPU %d, GPU instance %u)", job->attempts,
                    job->mig->name, g, job->mig_gi);
    }
    job->mig = NULL;
}

/* Gives running attempts their MIG instances from the store and destroys
 * the others. After a restart each failure is logged; on a tick (quiet)
 * only the instances destroyed are, as a busy one is tried every tick. */
static void d_share_sweep(d_daemon *d, bool quiet) {
    static store_mig rows[D_SHARE_MAX_MIG];
    int n = store_mig_list(d->st, rows, D_SHARE_MAX_MIG);
    d->mig_leftover = false;
    for (int i = 0; i < n; i++) {
        const store_mig *m = &rows[i];
        d_job *job = d_job_find(d, m->job_id);
        const mig_model *model = m->gpu >= 0 && m->gpu < d->ngpus
                                     ? d->gpus[m->gpu].mig_model : NULL;
        const mig_profile *p = model ? mig_profile_find(model, m->profile)
                                     : NULL;
        if (job && job->state == D_RUNNING && job->attempts == m->n && p &&
            job->ngpus > 0 && job->gpus[0] == m->gpu) {
            job->mig = p;
            job->mig_start = m->start;
            job->mig_gi = m->gi;
            job->mig_ci = m->ci;
            continue;
        }
        char err[1024];
        if (m->gpu < 0 || m->gpu >= d->ngpus ||
            tel_mig_destroy(d->tel, m->gpu, m->gi, m->ci, err,
                            sizeof(err)) != 0) {
            if (m->gpu >= 0 && m->gpu < d->ngpus) d->mig_leftover = true;
            if (!quiet)
                d_log("GPU %d: MIG instance %u of job %lld left from before "
                      "the restart not destroyed: %s", m->gpu, m->gi,
                      (long long)m->job_id,
                      m->gpu < d->ngpus ? err : "no such GPU");
            continue;
        }
        store_mig_remove(d->st, m->gpu, m->gi);
        d_log("GPU %d: MIG instance %u (%s) of job %lld, attempt %d, %s: "
              "destroyed", m->gpu, m->gi, m->profile, (long long)m->job_id,
              m->n, quiet ? "left by its processes" : "left from before the "
              "restart");
    }
}

void d_share_recover(d_daemon *d) {
    d_share_sweep(d, false);
}

void d_share_tick(d_daemon *d) {
    if (d->mig_leftover) d_share_sweep(d, true);
}
