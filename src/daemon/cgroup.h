/* cgroup.h -- per-job CPU and host-RAM limits (Slurm's task/cgroup): each
 * attempt of a job that asks for them (--cpus, --host-mem, or the
 * per-GPU defaults) runs in a cgroup of its own, made by aegisd before
 * the job starts and removed after it ends. The job's own process joins
 * it (exec.c) before it becomes the user and runs the command, so
 * nothing it starts escapes it.
 *
 * Both hierarchies are served, under a root folder (/sys/fs/cgroup):
 *   v2 (a unified tree: root/cgroup.controllers exists): D/aegis/
 *      job-ID.ATT, D being aegisd's own cgroup (under systemd, its
 *      unit's, which Delegate=yes makes aegisd's to divide), with
 *      memory.max, memory.swap.max 0 and cpu.max "QUOTA PERIOD". v2
 *      lets processes live only in leaves, so aegisd moves itself into
 *      D/aegisd and enables the controllers in D and D/aegis
 *      (cgroup.subtree_control), which hold no process.
 *   v1 (one tree per controller): root/memory/aegis/job-ID.ATT with
 *      memory.limit_in_bytes (and memory.memsw.limit_in_bytes where swap
 *      is counted: the job cannot swap past its limit), and
 *      root/cpu/aegis/job-ID.ATT with cpu.cfs_quota_us.
 * A job over its memory is killed by the kernel's OOM killer inside its
 * cgroup; cg_oom_killed() reads the cgroup's count of such kills
 * (memory.events' oom_kill in v2, memory.oom_control's in v1), so the
 * end is reported as over its host memory, not a GPU OOM.
 */
#ifndef AEGIS_CGROUP_H
#define AEGIS_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef enum cg_version { CG_NONE, CG_V1, CG_V2 } cg_version;

/* The folders of one attempt's cgroup: v2's one, or v1's memory and cpu
 * ones ("" where none). */
typedef struct cg_job {
    char memory[512];
    char cpu[512];
} cg_job;

/* The hierarchy under root: CG_V2, CG_V1 (memory and cpu trees), or
 * CG_NONE. */
cg_version cg_detect(const char *root);

/* v2: the folder under root of the cgroup aegisd is in (its line "0::PATH"
 * of /proc/self/cgroup: under systemd, the unit's cgroup that
 * Delegate=yes hands it), into out; aegisd moves itself into its leaf
 * OUT/aegisd, with the process `also` when > 0 (its launcher, whose
 * watchers start where it is), so that OUT may give its children
 * controllers (v2's rule: no processes in a cgroup that does). 0, or -1
 * with why in err. */
int cg_v2_delegate(const char *root, pid_t also, char *out, size_t len,
                   char *err, size_t errlen);

/* Makes attempt `attempt` of job id's cgroup under root (for v2, the
 * folder cg_v2_delegate() gave), limited to cpus
 * CPUs (0: no limit) and host_mem_mib MiB (0: no limit). 0, or -1 with
 * why in err (the folder or file named). */
int cg_job_create(const char *root, cg_version v, int64_t id, int attempt,
                  int cpus, double host_mem_mib, cg_job *out, char *err,
                  size_t errlen);

/* The cgroup folders of attempt `attempt` of job id made before aegisd
 * restarted (cg_job_create's names under root, or under the folder
 * cg_v2_delegate() gives), those that exist; "" for the others. A
 * re-adopted attempt gets them back, so that its kill for memory is told
 * as such and its folders are removed at its end. */
void cg_job_find(const char *root, int64_t id, int attempt, cg_job *out);

/* The paths a job's process writes "0" to join its cgroup, as
 * "PATH[:PATH]" into out ("" when none). */
void cg_job_procs(const cg_job *cg, char *out, size_t len);

/* Whether cg names a folder at all. */
bool cg_job_any(const cg_job *cg);

/* Whether the kernel killed a process of the cgroup for its memory;
 * false for NULL (no cgroup). */
bool cg_oom_killed(const cg_job *cg);

/* Removes the attempt's cgroup folders (empty once its processes are
 * gone); nothing for NULL. */
void cg_job_remove(const cg_job *cg);

/* In a job's process, before it runs the command: joins each cgroup of
 * procs (cg_job_procs()). 0, or -1 with errno. */
int cg_join(const char *procs);

#endif
