/* sharing.c -- the `sharing:` settings of aegis.yaml (see sharing.h). */
#include "sharing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sharing_config_default(sharing_config *s) {
    memset(s, 0, sizeof(*s));
    sharing_config_clear_modes(s);
    snprintf(s->mps_control, sizeof(s->mps_control), "%s", SHARING_MPS_CONTROL);
    s->mps_pin_memory = true;
}

void sharing_config_clear_modes(sharing_config *s) {
    s->dflt = SHARE_NAIVE;
    memset(s->gpu, -1, sizeof(s->gpu));
    memset(s->line, 0, sizeof(s->line));
    s->dflt_line = 0;
}

/* The mode named value, or -1 with a message naming key. */
static int sharing_parse_mode(const char *key, const char *value, char *msg,
                              size_t msglen) {
    int m = share_mode_parse(value);
    if (m < 0)
        snprintf(msg, msglen, "%s: '%s' is not a sharing mode (%s)", key,
                 value, SHARE_MODE_LIST);
    return m;
}

/* Copies a path value into out; -1 when empty or too long. */
static int sharing_path(const char *key, const char *value, char *out,
                        size_t outlen, char *msg, size_t msglen) {
    if (!value[0] || strlen(value) >= outlen) {
        snprintf(msg, msglen, "%s: '%s' is empty or longer than %zu bytes",
                 key, value, outlen - 1);
        return -1;
    }
    snprintf(out, outlen, "%s", value);
    return 1;
}

int sharing_config_set(sharing_config *s, const char *key, const char *value,
                       char *msg, size_t msglen) {
    if (strcmp(key, "sharing") == 0) {
        int m = sharing_parse_mode(key, value, msg, msglen);
        if (m < 0) return -1;
        /* one mode for every GPU: an earlier mapping's overrides go too */
        sharing_config_clear_modes(s);
        s->dflt = (share_mode)m;
        return 1;
    }
    if (strcmp(key, "mps_control") == 0)
        return sharing_path(key, value, s->mps_control, sizeof(s->mps_control),
                            msg, msglen);
    if (strcmp(key, "mps_dir") == 0) {
        if (value[0] != '/') {
            snprintf(msg, msglen, "%s: '%s' is not an absolute path", key,
                     value);
            return -1;
        }
        return sharing_path(key, value, s->mps_dir, sizeof(s->mps_dir), msg,
                            msglen);
    }
    if (strcmp(key, "mps_pin_memory") == 0) {
        if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0) {
            snprintf(msg, msglen, "%s: '%s' is not 0 or 1", key, value);
            return -1;
        }
        s->mps_pin_memory = value[0] == '1';
        return 1;
    }
    return 0;
}

int sharing_config_set_gpu(sharing_config *s, const char *key,
                           const char *value, int line, char *msg,
                           size_t msglen) {
    char name[160];
    snprintf(name, sizeof(name), "sharing: %s", key);
    int m = sharing_parse_mode(name, value, msg, msglen);
    if (m < 0) return -1;
    if (strcmp(key, "default") == 0) {
        s->dflt = (share_mode)m;
        s->dflt_line = line;
        return 0;
    }
    char *end;
    long g = strtol(key, &end, 10);
    if (key[0] < '0' || key[0] > '9' || *end || g >= CORE_MAX_GPUS) {
        snprintf(msg, msglen, "%s: not 'default' or a GPU index 0..%d", name,
                 CORE_MAX_GPUS - 1);
        return -1;
    }
    s->gpu[g] = (signed char)m;
    s->line[g] = line;
    return 0;
}

share_mode sharing_mode(const sharing_config *s, int gpu) {
    if (gpu >= 0 && gpu < CORE_MAX_GPUS && s->gpu[gpu] >= 0)
        return (share_mode)s->gpu[gpu];
    return s->dflt;
}

int sharing_mode_line(const sharing_config *s, int gpu) {
    if (gpu >= 0 && gpu < CORE_MAX_GPUS && s->gpu[gpu] >= 0)
        return s->line[gpu];
    return s->dflt_line;
}

int sharing_check_gpus(const sharing_config *s, int ngpus, const char *path,
                       char *err, size_t errlen) {
    for (int g = ngpus; g < CORE_MAX_GPUS; g++)
        if (s->gpu[g] >= 0) {
            snprintf(err, errlen, "%s:%d: sharing: %d: no such GPU (%d "
                     "found)", path, s->line[g], g, ngpus);
            return -1;
        }
    return 0;
}

void sharing_mps_dirs(const char *dir, int gpu, char *pipe_dir,
                      char *log_dir, size_t len) {
    snprintf(pipe_dir, len, "%s/%d/pipe", dir, gpu);
    snprintf(log_dir, len, "%s/%d/log", dir, gpu);
}
