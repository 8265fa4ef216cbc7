/* feed_json.h -- `aegis feed ls|gc --json`: a feed as a JSON object.
 *
 * The feed library (src/feed) lists the feeds; their JSON is built here,
 * with jansson, as the CLI's other listings are: a feed's owner is a name
 * from the user database, which may hold a quote or bytes that are not
 * UTF-8, and a JSON line printed field by field broke on it.
 *
 * Ownership: each function returns a new reference (NULL only when out of
 * memory); the caller decrefs it.
 */
#ifndef AEGIS_FEED_JSON_H
#define AEGIS_FEED_JSON_H

#include <jansson.h>

#include "feed_admin.h"

/* The json_dumps() flags of a feed's line: one line, and idle_s's
 * milliseconds without a binary fraction's tail. */
#define FEED_JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(15))

/* One feed of feed_list(): "name", "owner", "producer_pid", "producer"
 * (feed_producer_state()), "corrupt" (null or why), "epoch",
 * "epoch_batches", "published", "slots", "bytes", and "consumers", an
 * array of {"pid", "alive", "batch_size", "epoch", "position", "lag",
 * "batches", "idle_s"}. */
json_t *feed_json(const feed_info *fi);
/* What feed_gc() did with one feed: "name", "owner", "removed", and
 * "error" when it was not. */
json_t *feed_gc_json(const feed_info *fi);

#endif
