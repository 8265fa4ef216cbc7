/* feed_trust.c -- AEGIS_FEED_TRUST's list read the one way for the feed
 * library and for aegisd (feed_trust.h). */
#include "feed_trust.h"

#include "text_safe.h"

#include <pwd.h>
#include <stdio.h>
#include <string.h>

void feed_user_name(uid_t uid, char *buf, size_t len) {
    struct passwd pw, *found = NULL;
    char text[1024];
    if (getpwuid_r(uid, &pw, text, sizeof text, &found) == 0 && found)
        snprintf(buf, len, "%s", pw.pw_name);
    else
        snprintf(buf, len, "%lu", (unsigned long)uid);
}

void feed_user_shown(uid_t uid, char *buf, size_t len) {
    char name[256];
    feed_user_name(uid, name, sizeof name);
    text_safe(buf, len, name);
}

int feed_trust_names(const char *list, uid_t uid) {
    char name[64], number[24];
    if (!list) return 0;
    feed_user_name(uid, name, sizeof name);
    snprintf(number, sizeof number, "%lu", (unsigned long)uid);
    while (*list) {
        size_t n = strcspn(list, ",");
        if ((n == strlen(name) && !memcmp(list, name, n)) ||
            (n == strlen(number) && !memcmp(list, number, n)))
            return 1;
        list += n + (list[n] == ',');
    }
    return 0;
}
