/* share.c -- read access for named users through POSIX ACLs (share.h). */
#include "share.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/acl.h>
#include <acl/libacl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dsconf.h"
#include "feed_trust.h"

enum { PERM_NONE = 0, PERM_X = 1, PERM_R = 4 };

/* Deletes uid's entry from acl, if it has one. */
static void drop_user(acl_t acl, uid_t uid) {
    acl_entry_t e;
    for (int id = ACL_FIRST_ENTRY; acl_get_entry(acl, id, &e) == 1;
         id = ACL_NEXT_ENTRY) {
        acl_tag_t tag;
        uid_t *who;
        if (acl_get_tag_type(e, &tag) < 0 || tag != ACL_USER)
            continue;
        who = acl_get_qualifier(e);
        int match = who && *who == uid;
        acl_free(who);
        if (match) {
            acl_delete_entry(acl, e);
            return;
        }
    }
}

static int add_user(acl_t *acl, uid_t uid, int perms) {
    acl_entry_t e;
    acl_permset_t set;
    if (acl_create_entry(acl, &e) < 0 || acl_set_tag_type(e, ACL_USER) < 0 ||
        acl_set_qualifier(e, &uid) < 0 || acl_get_permset(e, &set) < 0 ||
        acl_clear_perms(set) < 0)
        return -1;
    if ((perms & PERM_R) && acl_add_perm(set, ACL_READ) < 0)
        return -1;
    if ((perms & PERM_X) && acl_add_perm(set, ACL_EXECUTE) < 0)
        return -1;
    return 0;
}

/* A default ACL needs the owner, group and other entries: those of the
 * folder's mode, as a new file without a default ACL would get. */
static acl_t default_base(const char *path) {
    struct stat st;
    return stat(path, &st) < 0 ? NULL : acl_from_mode(st.st_mode & 0777);
}

/* Sets (perms) or removes (PERM_NONE) uid's entry in path's ACL of type. */
static int set_entry(const char *path, acl_type_t type, uid_t uid, int perms,
                     char *err, size_t errlen) {
    acl_t acl = acl_get_file(path, type);
    if (acl && type == ACL_TYPE_DEFAULT && acl_entries(acl) == 0) {
        acl_free(acl);
        if (!perms) /* no default ACL: no entry to remove */
            return 0;
        acl = default_base(path);
    }
    int rc = acl ? 0 : -1;
    if (rc == 0) {
        drop_user(acl, uid);
        if (perms)
            rc = add_user(&acl, uid, perms);
    }
    if (rc == 0)
        rc = acl_calc_mask(&acl) < 0 || acl_set_file(path, type, acl) < 0
                 ? -1 : 0;
    if (rc < 0)
        snprintf(err, errlen, "setting the ACL of %s: %s", path,
                 strerror(errno));
    if (acl)
        acl_free(acl);
    return rc;
}

/* A folder and the regular files in it: r-x (and a default r--) on the
 * folder, r-- on its files. */
static int share_folder(const char *dir, uid_t uid, int grant, char *err,
                        size_t errlen) {
    if (set_entry(dir, ACL_TYPE_ACCESS, uid, grant ? PERM_R | PERM_X : 0, err,
                  errlen) < 0 ||
        set_entry(dir, ACL_TYPE_DEFAULT, uid, grant ? PERM_R : 0, err,
                  errlen) < 0)
        return -1;
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "listing %s: %s", dir, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        char path[8400];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) &&
            st.st_uid == geteuid())
            rc = set_entry(path, ACL_TYPE_ACCESS, uid, grant ? PERM_R : 0,
                           err, errlen);
    }
    closedir(d);
    return rc;
}

/* Search (x) for uid on the folders above dsdir that the caller owns and
 * that others may not search already. Those above the state folder are
 * told on said: search lists nothing, but lets uid open any file in the
 * folder whose own mode lets others read it, by its name (with the
 * default state folder, in the owner's home). That is said rather than
 * avoided: avoiding it would mean not reaching the dataset at all. The
 * state folder and its datasets/ hold only private folders. */
static int open_path(const char *state, const char *dsdir, uid_t uid,
                     FILE *said, char *err, size_t errlen) {
    char path[4200];
    snprintf(path, sizeof(path), "%s", dsdir);
    for (char *slash = strrchr(path, '/'); slash && slash != path;
         slash = strrchr(path, '/')) {
        struct stat st;
        *slash = '\0';
        if (stat(path, &st) < 0 || st.st_uid != geteuid() ||
            (st.st_mode & S_IXOTH))
            continue;
        if (set_entry(path, ACL_TYPE_ACCESS, uid, PERM_X, err, errlen) < 0)
            return -1;
        bool outside = strlen(path) < strlen(state);
        if (said && outside) {
            char who[64];
            feed_user_shown(uid, who, sizeof(who));
            fprintf(said, "aegis dataset share: %s: %s may pass through it "
                    "(search, no listing), so it can read a file there whose "
                    "mode lets others read it, knowing its name\n", path,
                    who);
        }
    }
    return 0;
}

int pl_dataset_share(const char *state, const char *name, uid_t uid,
                     int grant, FILE *said, char *err, size_t errlen) {
    char dsdir[4200];
    pl_dsconf conf;
    if (pl_dataset_dir(state, name, dsdir, sizeof(dsdir)) < 0) {
        snprintf(err, errlen, "'%s' is not a dataset name", name);
        return -1;
    }
    if (pl_dsconf_load(dsdir, &conf, err, errlen) < 0 ||
        share_folder(dsdir, uid, grant, err, errlen) < 0 ||
        share_folder(conf.dir, uid, grant, err, errlen) < 0)
        return -1;
    return grant ? open_path(state, dsdir, uid, said, err, errlen) : 0;
}
