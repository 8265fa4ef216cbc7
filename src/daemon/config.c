/* config.c -- reading aegisd's YAML configuration into a core_config, the
 * report settings (acct_params) and the sharing modes (sharing_config).
 *
 * The file is a flat mapping of scalars (comments and blank lines are
 * fine), but for `sharing:`, which may be a mapping of its own. libyaml's
 * event parser gives each scalar its line, so every error names FILE:LINE.
 * A bad value does not stop the reading: every problem of the file is
 * reported at once, one "FILE:LINE: message" line each, so that an admin
 * fixes them in one go (--check-config). Only a YAML syntax error stops it,
 * as what follows it cannot be told apart.
 */
#include "config.h"

#include "autogroup.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

/* Where the problems of one file go: err holds them one a line. */
typedef struct config_report {
    const char *path;
    char *err;
    size_t errlen;
    size_t used;                    /* bytes of err written */
    int problems;
    int shown;                      /* those written to err */
} config_report;

/* Bytes of err kept for config_report_more()'s line. */
#define CONFIG_MORE_ROOM 80

/* Adds "PATH:LINE: message" as err's next line, whole: a line that does
 * not fit (but the first, cut) is only counted, for config_report_more(),
 * so that no line ends cut short of its key (a SIGHUP's log showed
 * "aegis.yaml:18: config: u"). */
static void config_problem(config_report *rep, int line, const char *fmt,
                           ...) __attribute__((format(printf, 3, 4)));
static void config_problem(config_report *rep, int line, const char *fmt,
                           ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    rep->problems++;
    size_t limit = rep->errlen > 2 * CONFIG_MORE_ROOM
                       ? rep->errlen - CONFIG_MORE_ROOM : rep->errlen;
    const char *sep = rep->used ? "\n" : "";
    int n = snprintf(NULL, 0, "%s%s:%d: %s", sep, rep->path, line, msg);
    if (n < 0 || rep->used + 1 >= limit ||
        (rep->shown && rep->used + (size_t)n >= limit))
        return;
    size_t room = limit - rep->used;
    snprintf(rep->err + rep->used, room, "%s%s:%d: %s", sep, rep->path, line,
             msg);
    rep->used += (size_t)n < room ? (size_t)n : room - 1;
    rep->shown++;
}

/* Ends err with how many problems it could not hold, if any. */
static void config_report_more(config_report *rep) {
    int more = rep->problems - rep->shown;
    if (more <= 0 || rep->used + 1 >= rep->errlen) return;
    snprintf(rep->err + rep->used, rep->errlen - rep->used,
             "\n... and %d more problem%s, not shown", more,
             more == 1 ? "" : "s");
}

/* The line of an event, 1-based. */
static int config_line(const yaml_event_t *ev) {
    return (int)ev->start_mark.line + 1;
}

/* The next event, or -1 with libyaml's complaint at FILE:LINE. An alias
 * (*name) is refused here, wherever it stands: the reader does not
 * resolve them, and one in a value's place read as a value of another
 * kind ("expected a single value"). */
static int config_next(yaml_parser_t *p, config_report *rep, yaml_event_t *ev) {
    if (!yaml_parser_parse(p, ev)) {
        config_problem(rep, (int)p->problem_mark.line + 1, "%s", p->problem);
        return -1;
    }
    if (ev->type != YAML_ALIAS_EVENT) return 0;
    config_problem(rep, config_line(ev), "*%s: YAML aliases are not read; "
                   "write the value itself", (const char *)ev->data.alias.anchor);
    yaml_event_delete(ev);
    return -1;
}

/* socket_group: a name that fits (1), else -1 with a message. Whether the
 * group exists is config_group_check()'s: a reload, which does not apply
 * the key, must not be refused for it. */
static int config_group_set(char *socket_group, const char *value, char *msg,
                            size_t msglen) {
    if (strlen(value) >= CONFIG_GROUP_MAX) {
        snprintf(msg, msglen, "socket_group: a name of up to %d bytes",
                 CONFIG_GROUP_MAX - 1);
        return -1;
    }
    snprintf(socket_group, CONFIG_GROUP_MAX, "%s", value);
    return 1;
}

int config_group_check(const char *path, const config_keys *keys, char *err,
                       size_t errlen) {
    if (!keys->socket_group[0] || getgrnam(keys->socket_group)) return 0;
    snprintf(err, errlen, "%s:%d: socket_group: no group '%s' (a group of "
             "/etc/group, e.g. made with `groupadd aegis`, or '' for a socket "
             "any local user may use)", path, keys->socket_group_line,
             keys->socket_group);
    return -1;
}

/* cgroup_root: "" (no per-job cgroups) or an absolute path to a folder
 * that exists (1), else -1 with a message. Checked when the file is read,
 * so that --check-config, a start and a reload refuse it at its line: a
 * relative or missing root passed them all and then failed every job
 * that asked for a limit. */
static int config_cgroup_root_set(char *root, size_t rootlen,
                                  const char *value, char *msg,
                                  size_t msglen) {
    struct stat st;
    if (strlen(value) >= rootlen) {
        snprintf(msg, msglen, "cgroup_root: longer than %zu bytes",
                 rootlen - 1);
        return -1;
    }
    if (value[0] && (value[0] != '/' || stat(value, &st) != 0 ||
                     !S_ISDIR(st.st_mode))) {
        snprintf(msg, msglen, "cgroup_root: '%s' is not %s (where the "
                 "cgroup hierarchies are mounted, e.g. /sys/fs/cgroup, or "
                 "'' for no per-job cgroups)", value,
                 value[0] != '/' ? "an absolute path" : "a folder");
        return -1;
    }
    snprintf(root, rootlen, "%s", value);
    return 1;
}

/* Sets one of the daemon's own keys (not the core's): 1 when key is one,
 * 0 when it is not, -1 with a message when its value is bad. */
static int config_daemon_set(acct_params *acct, config_keys *keys,
                             const char *key, const char *value, char *msg,
                             size_t msglen) {
    if (strcmp(key, "notify") == 0) {
        if (strlen(value) > PROTO_MAX_NOTIFY) {
            snprintf(msg, msglen, "notify: longer than %d bytes",
                     PROTO_MAX_NOTIFY);
            return -1;
        }
        snprintf(keys->notify, sizeof(keys->notify), "%s", value);
        return 1;
    }
    if (strcmp(key, "cgroup_root") == 0)
        return config_cgroup_root_set(keys->cgroup_root,
                                      sizeof(keys->cgroup_root), value, msg,
                                      msglen);
    if (strcmp(key, "slurm_scontrol") == 0) {
        if (value[0] == '\0' || strlen(value) >= sizeof(keys->slurm_scontrol)) {
            snprintf(msg, msglen, "%s: expected a program, up to %zu bytes",
                     key, sizeof(keys->slurm_scontrol) - 1);
            return -1;
        }
        snprintf(keys->slurm_scontrol, sizeof(keys->slurm_scontrol), "%s",
                 value);
        return 1;
    }
    if (strcmp(key, "socket_group") == 0)
        return config_group_set(keys->socket_group, value, msg, msglen);
    const struct {
        const char *name;
        double *to;
        double lo, hi;
        bool whole;                 /* a count: no fraction */
    } nums[] = {
        {"grid_intensity_g_per_kwh", &acct->grid_g_per_kwh, 0, ACCT_GRID_MAX,
         false},
        {"pue", &acct->pue, 1, ACCT_PUE_MAX, false},
        {"log_max_mib", &keys->log_max_mib, CONFIG_LOG_MIN_MIB,
         CONFIG_LOG_MAX_MIB, true},
        {"history_period_s", &keys->history_period_s, HISTORY_MIN_PERIOD_S,
         HISTORY_MAX_PERIOD_S, false},
        {"notify_timeout_s", &keys->notify_timeout_s, NOTIFY_MIN_TIMEOUT_S,
         NOTIFY_MAX_TIMEOUT_S, false},
        {"metrics_cache_s", &keys->metrics_cache_s, CONFIG_METRICS_CACHE_MIN_S,
         CONFIG_METRICS_CACHE_MAX_S, false},
        {"metrics_max_jobs", &keys->metrics_max_jobs, 0,
         CONFIG_METRICS_JOBS_MAX, true},
        {"history_days", &keys->history_days, 0, 36500, false},
        {"cpus_per_gpu", &keys->cpus_per_gpu, 0, CONFIG_CPUS_MAX, true},
        {"host_mem_per_gpu_mib", &keys->host_mem_per_gpu_mib, 0,
         PROTO_MAX_MEM_MIB, true},
        {"job_session_nice", &keys->job_session_nice, 0,
         AUTOGROUP_NICE_MAX, true},
    };
    for (size_t i = 0; i < sizeof(nums) / sizeof(*nums); i++) {
        if (strcmp(key, nums[i].name) != 0) continue;
        char *stop;
        errno = 0;
        double v = strtod(value, &stop);
        if (!core_config_decimal(value) || *stop != '\0' || errno ||
            !isfinite(v) || v < nums[i].lo || v > nums[i].hi ||
            (nums[i].whole && v != floor(v))) {
            snprintf(msg, msglen, "%s: '%s' is not a %s in [%.15g, %.15g]",
                     key, value, nums[i].whole ? "whole number" : "number",
                     nums[i].lo, nums[i].hi);
            return -1;
        }
        *nums[i].to = v;
        return 1;
    }
    return 0;
}

int config_listen_addr(const char *text, struct sockaddr_storage *sa,
                       char *msg, size_t msglen) {
    char host[CONFIG_LISTEN_MAX];
    const char *colon = strrchr(text, ':');
    size_t hlen = colon ? (size_t)(colon - text) : 0;
    bool v6 = hlen >= 2 && text[0] == '[' && text[hlen - 1] == ']';
    if (v6) {
        text++;
        hlen -= 2;
    }
    char *stop = NULL;
    errno = 0;
    /* digits only: strtol also takes "+80" and " 80" */
    bool digits = colon && colon[1] &&
                  strspn(colon + 1, "0123456789") == strlen(colon + 1);
    long port = digits ? strtol(colon + 1, &stop, 10) : 0;
    *sa = (struct sockaddr_storage){0};
    struct sockaddr_in *in4 = (struct sockaddr_in *)sa;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;
    bool ok = colon && hlen > 0 && hlen < sizeof(host) && port >= 1 &&
              port <= 65535 && !errno && *stop == '\0';
    if (ok) {
        memcpy(host, text, hlen);
        host[hlen] = '\0';
        if (v6) {
            in6->sin6_family = AF_INET6;
            in6->sin6_port = htons((uint16_t)port);
            ok = inet_pton(AF_INET6, host, &in6->sin6_addr) == 1;
        } else {
            in4->sin_family = AF_INET;
            in4->sin_port = htons((uint16_t)port);
            ok = inet_pton(AF_INET, host, &in4->sin_addr) == 1;
        }
    }
    if (ok) return 0;
    snprintf(msg, msglen, "metrics_listen: '%s' is not ADDRESS:PORT (an IP "
             "address, IPv6 in brackets, and a port 1..65535, e.g. "
             "127.0.0.1:9464)", v6 ? text - 1 : text);
    return -1;
}

/* metrics_listen, checked, into metrics_listen: 1 when key is it, 0 when
 * it is not, -1 with a message when its value is bad. An empty value
 * turns the endpoint off. */
static int config_listen_set(char *metrics_listen, const char *key,
                             const char *value, char *msg, size_t msglen) {
    if (strcmp(key, "metrics_listen") != 0) return 0;
    struct sockaddr_storage sa;
    if (value[0] && config_listen_addr(value, &sa, msg, msglen) != 0)
        return -1;
    snprintf(metrics_listen, CONFIG_LISTEN_MAX, "%s", value);
    return 1;
}

/* Whether a value scalar is YAML's null: plain (unquoted) ~, null, Null,
 * NULL or nothing. No key takes null: read as text, `notify: ~` ran "~"
 * at every job's end. Refused, for every key alike, rather than taken as
 * the default: for cgroup_root or notify a null could as well mean
 * "none", and the admin says which by leaving the line out or giving
 * '' (quoted). */
static bool config_is_null(const yaml_event_t *ev) {
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
    if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return false;
    for (size_t i = 0; i < sizeof(nulls) / sizeof(*nulls); i++)
        if (strcmp((const char *)ev->data.scalar.value, nulls[i]) == 0)
            return true;
    return false;
}

/* Whether a scalar holds a NUL byte. C strings end at it: a name
 * "window_samples\0junk" was read as window_samples, a value "3\0junk"
 * as 3. */
static bool config_has_nul(const yaml_event_t *ev) {
    return strlen((const char *)ev->data.scalar.value) !=
           ev->data.scalar.length;
}

/* The problem of a null value for key (config_is_null). */
static void config_null_problem(config_report *rep, int line, const char *key,
                                const yaml_event_t *ev) {
    config_problem(rep, line, "%s: YAML null ('%s') is no value: leave the "
                   "line out for the default, or quote the text meant", key,
                   (const char *)ev->data.scalar.value);
}

/* The mapping form of `sharing:` (its start already read): `default` and
 * GPU indexes, each to a mode. A bad entry is reported and skipped; -1
 * only when the YAML itself cannot be read on. */
static int config_sharing_map(yaml_parser_t *p, config_report *rep,
                              sharing_config *share) {
    char key[128], msg[256];
    for (;;) {
        yaml_event_t ev;
        if (config_next(p, rep, &ev) != 0) return -1;
        int line = config_line(&ev);
        if (ev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&ev);
            return 0;
        }
        bool scalar = ev.type == YAML_SCALAR_EVENT;
        bool nul_key = scalar && config_has_nul(&ev);
        if (scalar)
            snprintf(key, sizeof(key), "%s", (const char *)ev.data.scalar.value);
        yaml_event_delete(&ev);
        if (!scalar) {
            config_problem(rep, line, "sharing: expected 'GPU: mode'");
            return -1;
        }
        if (config_next(p, rep, &ev) != 0) return -1;
        bool null = ev.type == YAML_SCALAR_EVENT && config_is_null(&ev);
        bool nul = ev.type == YAML_SCALAR_EVENT &&
                   (nul_key || config_has_nul(&ev));
        if (null)
            snprintf(msg, sizeof(msg), "sharing: %s: YAML null ('%s') is no "
                     "mode: leave the line out for the default", key,
                     (const char *)ev.data.scalar.value);
        else if (nul)
            snprintf(msg, sizeof(msg), "sharing: %s: the %s holds a NUL byte",
                     key, nul_key ? "GPU key" : "mode");
        int rc = null || nul ? -1
                 : ev.type == YAML_SCALAR_EVENT
                     ? sharing_config_set_gpu(share, key,
                                              (const char *)ev.data.scalar.value,
                                              line, msg, sizeof(msg))
                     : (snprintf(msg, sizeof(msg), "sharing: %s: expected a "
                                 "single mode", key), -1);
        bool nested = ev.type != YAML_SCALAR_EVENT;
        yaml_event_delete(&ev);
        if (rc != 0) config_problem(rep, line, "%s", msg);
        if (nested) return -1;      /* its events would be read as keys */
    }
}

/* Sets key to value, trying the daemon's keys, the metrics address, the
 * sharing keys and the core's in turn; a bad value is reported. */
static void config_pair(config_report *rep, int line, core_config *cfg,
                        acct_params *acct, sharing_config *share,
                        config_keys *keys, const char *key,
                        const char *value) {
    char msg[512];
    int rc = config_daemon_set(acct, keys, key, value, msg, sizeof(msg));
    if (rc == 0)
        rc = config_listen_set(keys->metrics_listen, key, value, msg,
                               sizeof(msg));
    if (rc == 0) {
        rc = sharing_config_set(share, key, value, msg, sizeof(msg));
        if (rc > 0 && strcmp(key, "sharing") == 0) share->dflt_line = line;
    }
    if (rc > 0 && strcmp(key, "socket_group") == 0)
        keys->socket_group_line = line;
    if (rc == 0) rc = core_config_set(cfg, key, value, msg, sizeof(msg));
    else if (rc > 0) rc = 0;
    if (rc != 0) config_problem(rep, line, "%s", msg);
}

/* Sets key to a scalar value, refusing YAML's null and a NUL byte. */
static void config_scalar(config_report *rep, int line, core_config *cfg,
                          acct_params *acct, sharing_config *share,
                          config_keys *keys, const char *key,
                          const yaml_event_t *ev) {
    if (config_is_null(ev))
        config_null_problem(rep, line, key, ev);
    else if (config_has_nul(ev))
        config_problem(rep, line, "%s: the value holds a NUL byte", key);
    else
        config_pair(rep, line, cfg, acct, share, keys, key,
                    (const char *)ev->data.scalar.value);
}

/* Reads key/value scalar pairs until the mapping ends; a bad value is
 * reported and the next pair read. A key given again overrides it (a
 * line appended to the file changes a setting). -1 when the YAML cannot
 * be read on. */
static int config_pairs(yaml_parser_t *p, config_report *rep,
                        core_config *cfg, acct_params *acct,
                        sharing_config *share, config_keys *keys) {
    char key[128];
    for (;;) {
        yaml_event_t ev;
        if (config_next(p, rep, &ev) != 0) return -1;
        int line = config_line(&ev);
        yaml_event_type_t type = ev.type;
        if (type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&ev);
            return 0;
        }
        if (type != YAML_SCALAR_EVENT) {
            yaml_event_delete(&ev);
            config_problem(rep, line, "expected 'name: value'");
            return -1;
        }
        bool nul_key = config_has_nul(&ev);
        snprintf(key, sizeof(key), "%s", (const char *)ev.data.scalar.value);
        if (nul_key)
            config_problem(rep, line, "%s: the name holds a NUL byte", key);
        yaml_event_delete(&ev);
        if (config_next(p, rep, &ev) != 0) return -1;
        line = config_line(&ev);
        type = ev.type;
        if (type == YAML_SCALAR_EVENT && !nul_key)
            config_scalar(rep, line, cfg, acct, share, keys, key, &ev);
        yaml_event_delete(&ev);
        if (type == YAML_MAPPING_START_EVENT && !nul_key &&
            strcmp(key, "sharing") == 0) {
            /* replaces an earlier `sharing:` whole, either form */
            sharing_config_clear_modes(share);
            if (config_sharing_map(p, rep, share) != 0) return -1;
        } else if (type != YAML_SCALAR_EVENT) {
            config_problem(rep, line, "%s: expected a single value", key);
            return -1;              /* its events would be read as keys */
        }
    }
}

/* After the document: the stream's end, not a second document (which
 * would be ignored). */
static int config_stream_ends(yaml_parser_t *p, config_report *rep) {
    for (;;) {
        yaml_event_t ev;
        if (config_next(p, rep, &ev) != 0) return -1;
        yaml_event_type_t type = ev.type;
        int line = config_line(&ev);
        yaml_event_delete(&ev);
        if (type == YAML_STREAM_END_EVENT || type == YAML_NO_EVENT) return 0;
        if (type == YAML_DOCUMENT_END_EVENT) continue;
        config_problem(rep, line, "config: a second YAML document (the file "
                       "holds one)");
        return -1;
    }
}

/* Walks stream/document starts to the top mapping; an empty document is
 * an empty configuration. */
static int config_document(yaml_parser_t *p, config_report *rep,
                           core_config *cfg, acct_params *acct,
                           sharing_config *share, config_keys *keys) {
    for (;;) {
        yaml_event_t ev;
        if (config_next(p, rep, &ev) != 0) return -1;
        yaml_event_type_t type = ev.type;
        int line = config_line(&ev);
        /* a document of only "~" or "" is empty, any other scalar is not */
        bool empty = type == YAML_SCALAR_EVENT &&
                     (ev.data.scalar.length == 0 ||
                      strcmp((const char *)ev.data.scalar.value, "~") == 0);
        yaml_event_delete(&ev);
        if (empty) return 0;
        switch (type) {
        case YAML_STREAM_START_EVENT:
        case YAML_DOCUMENT_START_EVENT:
            continue;
        case YAML_STREAM_END_EVENT:
        case YAML_DOCUMENT_END_EVENT:
            return 0;
        case YAML_MAPPING_START_EVENT:
            return config_pairs(p, rep, cfg, acct, share, keys);
        default:
            config_problem(rep, line, "expected a mapping of name: value");
            return -1;
        }
    }
}

static int config_parse(yaml_parser_t *p, config_report *rep,
                        core_config *cfg, acct_params *acct,
                        sharing_config *share, config_keys *keys) {
    int rc = config_document(p, rep, cfg, acct, share, keys);
    return rc == 0 ? config_stream_ends(p, rep) : rc;
}

int config_load(const char *path, bool missing_ok, core_config *cfg,
                char *err, size_t errlen) {
    acct_params ignored;
    return config_load_acct(path, missing_ok, cfg, &ignored, err, errlen);
}

int config_load_acct(const char *path, bool missing_ok, core_config *cfg,
                     acct_params *acct, char *err, size_t errlen) {
    sharing_config ignored;
    config_keys keys;
    return config_load_daemon(path, missing_ok, cfg, acct, &ignored, &keys,
                              err, errlen);
}

int config_load_daemon(const char *path, bool missing_ok, core_config *cfg,
                       acct_params *acct, sharing_config *share,
                       config_keys *keys, char *err, size_t errlen) {
    core_config_default(cfg);
    acct_params_default(acct);
    sharing_config_default(share);
    *keys = (config_keys){.log_max_mib = CONFIG_LOG_DEFAULT_MIB,
                          .history_period_s = HISTORY_DEFAULT_PERIOD_S,
                          .notify_timeout_s = NOTIFY_DEFAULT_TIMEOUT_S,
                          .metrics_cache_s = CONFIG_METRICS_CACHE_DEFAULT_S,
                          .metrics_max_jobs = CONFIG_METRICS_JOBS_DEFAULT,
                          .slurm_scontrol = CONFIG_SCONTROL_DEFAULT,
                          .cgroup_root = CONFIG_CGROUP_ROOT_DEFAULT,
                          .job_session_nice = AUTOGROUP_JOB_NICE_DEFAULT};
    /* On a live server users may declare a job's memory (submit --mem),
     * and several users share it. aegis-plus admits a job with that figure
     * + est_margin_mib (up to est_cap_mib), any other with the
     * estimator-free no_est_demand_mib, lets small jobs past a blocked
     * one and shares the server fairly between users (docs/design.md).
     * A declared --mem is trusted whole (est_cap_mib 0): the memory gate
     * must refuse a job that says it cannot fit. The simulator's cap is
     * for estimator columns, which overestimate. */
    cfg->policy = "aegis-plus";
    cfg->est_cap_mib = 0;
    /* O_NONBLOCK: a FIFO there must not stop aegisd in open() (a SIGHUP
     * reloads it on the loop); it is then refused as no regular file. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat st;
    if (fd < 0) {
        if (missing_ok && errno == ENOENT) return 0;
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        close(fd);
        return -1;
    }
    FILE *f = fdopen(fd, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        fclose(f);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    yaml_parser_set_input_file(&p, f);
    config_report rep = {.path = path, .err = err, .errlen = errlen};
    if (errlen) err[0] = '\0';
    config_parse(&p, &rep, cfg, acct, share, keys);
    config_report_more(&rep);
    yaml_parser_delete(&p);
    fclose(f);
    return rep.problems ? -1 : 0;
}
