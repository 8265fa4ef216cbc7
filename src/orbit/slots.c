/* slots.c -- numbered slots as files "pipeline-N" and "config-N": a
 * 16-byte header (magic "DSL2", then the CRC-32 of everything after it,
 * the content's length and the slot's version, little endian) and the
 * content. The version is the ground's number for what the slot holds
 * (a signed write must carry a higher one: sat.c). */
#include "slots.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform.h"

#define HDR 16

static uint32_t crc32(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t k = 0; k < n; k++) {
        c ^= p[k];
        for (int b = 0; b < 8; b++)
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}

static void put32(uint8_t *p, uint32_t v) {
    for (int k = 0; k < 4; k++)
        p[k] = (uint8_t)(v >> (8 * k));
}

static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

unsigned slot_count(slot_kind kind) {
    return kind == SLOT_PIPELINE ? SLOT_PIPELINES : SLOT_CONFIGS;
}

const char *slot_kind_name(slot_kind kind) {
    return kind == SLOT_PIPELINE ? "pipeline" : "config";
}

static int name_of(slot_kind kind, unsigned n, char *name, size_t cap) {
    snprintf(name, cap, "%s-%u", slot_kind_name(kind), n);
    return n >= 1 && n <= slot_count(kind) ? 0 : -1;
}

#define SLOT_NAME_CAP 32 /* a slot's file name, with its NUL */

/* Slot n's file name into name[SLOT_NAME_CAP]: 0, or -1 when there is no such slot
 * (why in err). */
static int slot_name(const char *dir, slot_kind kind, unsigned n, char *name, char *err,
                     size_t errlen) {
    if (!name_of(kind, n, name, SLOT_NAME_CAP))
        return 0;
    snprintf(err, errlen, "%s/%s: no such slot (1..%u)", dir, name, slot_count(kind));
    return -1;
}

/* Replaces file name in dir by one record: header and data. */
static int write_record(const char *dir, const char *name, const uint8_t *data,
                        size_t len, uint32_t version, char *err, size_t errlen) {
    uint8_t buf[HDR + SLOT_MAX_BYTES];
    memcpy(buf, "DSL2", 4);
    put32(buf + 8, (uint32_t)len);
    put32(buf + 12, version);
    memcpy(buf + HDR, data, len);
    put32(buf + 4, crc32(buf + 8, HDR - 8 + len));
    int rc = plat_file_replace(dir, name, buf, HDR + len);
    if (rc)
        snprintf(err, errlen, "%s/%s: %s", dir, name, strerror(-rc));
    return rc ? -1 : 0;
}

int slot_write(const char *dir, slot_kind kind, unsigned n, const uint8_t *data,
               size_t len, uint32_t version, char *err, size_t errlen) {
    char name[SLOT_NAME_CAP];
    if (slot_name(dir, kind, n, name, err, errlen))
        return -1;
    if (len > SLOT_MAX_BYTES) {
        snprintf(err, errlen, "%s/%s: %zu bytes, over %d", dir, name, len, SLOT_MAX_BYTES);
        return -1;
    }
    return write_record(dir, name, data, len, version, err, errlen);
}

static int check(const uint8_t *buf, size_t got, const char *path, char *err,
                 size_t errlen) {
    if (got < HDR || memcmp(buf, "DSL2", 4) != 0)
        snprintf(err, errlen, "%s: not a slot file (torn or foreign)", path);
    else if (get32(buf + 8) != got - HDR || got - HDR > SLOT_MAX_BYTES)
        snprintf(err, errlen, "%s: length %u, file has %zu: torn", path,
                 (unsigned)get32(buf + 8), got - HDR);
    else if (get32(buf + 4) != crc32(buf + 8, got - 8))
        snprintf(err, errlen, "%s: CRC mismatch: corrupt", path);
    else
        return 0;
    return -1;
}

/* Reads the record in dir/name: 0 with the file in *buf (freed by the
 * caller), 1 when there is none, -1 when unreadable or corrupt (err says
 * which). */
static int read_record(const char *dir, const char *name, uint8_t **buf, size_t *got,
                       char *err, size_t errlen) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int rc = plat_file_read(path, buf, got);
    if (rc == -ENOENT)
        return 1;
    if (rc) {
        snprintf(err, errlen, "%s: %s", path, strerror(-rc));
        return -1;
    }
    rc = check(*buf, *got, path, err, errlen);
    if (rc)
        free(*buf);
    return rc;
}

/* Reads slot n whole, as read_record. */
static int read_file(const char *dir, slot_kind kind, unsigned n, uint8_t **buf,
                     size_t *got, char *err, size_t errlen) {
    char name[SLOT_NAME_CAP];
    if (slot_name(dir, kind, n, name, err, errlen))
        return -1;
    return read_record(dir, name, buf, got, err, errlen);
}

int slot_read(const char *dir, slot_kind kind, unsigned n, uint8_t *data,
              size_t *len, char *err, size_t errlen) {
    uint8_t *buf;
    size_t got;
    int rc = read_file(dir, kind, n, &buf, &got, err, errlen);
    if (rc == 0) {
        *len = got - HDR;
        memcpy(data, buf + HDR, *len);
        free(buf);
    }
    return rc;
}

int slot_version(const char *dir, slot_kind kind, unsigned n, uint32_t *version,
                 char *err, size_t errlen) {
    uint8_t *buf;
    size_t got;
    int rc = read_file(dir, kind, n, &buf, &got, err, errlen);
    *version = 0;
    if (rc == 0) {
        *version = get32(buf + 12);
        free(buf);
    }
    return rc < 0 ? -1 : 0;
}

/* The floors: one record "floors" holding, for the pipeline slots then
 * the configuration slots, the highest version each has taken. */
#define FLOORS (SLOT_PIPELINES + SLOT_CONFIGS)

static unsigned floor_index(slot_kind kind, unsigned n) {
    return (kind == SLOT_PIPELINE ? 0 : SLOT_PIPELINES) + n - 1;
}

/* All floors into v[FLOORS] (0 where no record): 0, or -1. */
static int read_floors(const char *dir, uint32_t *v, char *err, size_t errlen) {
    uint8_t *buf;
    size_t got;
    memset(v, 0, FLOORS * sizeof *v);
    int rc = read_record(dir, "floors", &buf, &got, err, errlen);
    if (rc)
        return rc < 0 ? -1 : 0;
    for (unsigned k = 0; k < FLOORS && (k + 1) * 4 <= got - HDR; k++)
        v[k] = get32(buf + HDR + 4 * k);
    free(buf);
    return 0;
}

int slot_floor(const char *dir, slot_kind kind, unsigned n, uint32_t *version, char *err,
               size_t errlen) {
    uint32_t v[FLOORS];
    char name[SLOT_NAME_CAP];
    *version = 0;
    if (slot_name(dir, kind, n, name, err, errlen) || read_floors(dir, v, err, errlen))
        return -1;
    *version = v[floor_index(kind, n)];
    return 0;
}

int slot_raise_floor(const char *dir, slot_kind kind, unsigned n, uint32_t version,
                     char *err, size_t errlen) {
    uint32_t v[FLOORS];
    uint8_t data[FLOORS * 4];
    char name[SLOT_NAME_CAP];
    if (slot_name(dir, kind, n, name, err, errlen) || read_floors(dir, v, err, errlen))
        return -1;
    if (v[floor_index(kind, n)] >= version)
        return 0;
    v[floor_index(kind, n)] = version;
    for (unsigned k = 0; k < FLOORS; k++)
        put32(data + 4 * k, v[k]);
    return write_record(dir, "floors", data, sizeof data, 0, err, errlen);
}

int slot_take_counter(const char *dir, uint64_t counter, uint64_t *floor, char *err,
                      size_t errlen) {
    uint8_t *buf, data[8];
    size_t got;
    *floor = 0;
    int rc = read_record(dir, "commands", &buf, &got, err, errlen);
    if (rc < 0)
        return -1;
    if (rc == 0 && got - HDR != 8) {
        snprintf(err, errlen, "%s/commands: %zu bytes, not 8", dir, got - HDR);
        free(buf);
        return -1;
    }
    if (rc == 0) {
        *floor = get32(buf + HDR) | (uint64_t)get32(buf + HDR + 4) << 32;
        free(buf);
    }
    if (counter <= *floor)
        return 1;
    put32(data, (uint32_t)counter);
    put32(data + 4, (uint32_t)(counter >> 32));
    return write_record(dir, "commands", data, sizeof data, 0, err, errlen);
}
