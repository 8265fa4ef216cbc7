/* platform_fs.c -- the file operations of platform.h, routed through the
 * table in use: the OS's (platform_fs_posix.c), or a test's fault layer
 * that models a power cut. */
#include "platform.h"

extern const plat_fs plat_fs_posix;

static const plat_fs *fs_now = &plat_fs_posix;

void plat_fs_use(const plat_fs *fs) {
    fs_now = fs ? fs : &plat_fs_posix;
}

int plat_file_read(const char *path, uint8_t **data, size_t *len) {
    return fs_now->read(path, data, len);
}

int plat_file_replace(const char *dir, const char *name, const void *data,
                      size_t len) {
    return fs_now->replace(dir, name, data, len);
}

int plat_file_write_synced(const char *dir, const char *name, uint64_t off,
                           const void *data, size_t len) {
    return fs_now->write_synced(dir, name, off, data, len);
}

int plat_file_remove(const char *dir, const char *name) {
    return fs_now->remove(dir, name);
}
