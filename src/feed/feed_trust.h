/* feed_trust.h -- who trusts whom with a feed: AEGIS_FEED_TRUST, a
 * comma-separated list of user names and uids. A consumer reads the
 * segments of the users its own list names (feed_shm.c); aegisd wakes a
 * managed producer for another user's job only where each names the
 * other (src/daemon/feeds.c). Shared by both; it needs only text_safe.h. */
#ifndef AEGIS_FEED_TRUST_H
#define AEGIS_FEED_TRUST_H

#include <stddef.h>
#include <sys/types.h>

/* The name of user uid, or its number when it has none. */
void feed_user_name(uid_t uid, char *buf, size_t len);

/* That name as text shows it: a name from the user database may hold what
 * a terminal acts on, each such character '?' (text_safe.h). For
 * messages; feed_trust_names() compares the name itself. */
void feed_user_shown(uid_t uid, char *buf, size_t len);

/* Whether list (AEGIS_FEED_TRUST's value; NULL: none) names uid, by its
 * user name or its number. */
int feed_trust_names(const char *list, uid_t uid);

#endif
