/* feed_json.c -- `aegis feed ls|gc --json`: a feed as a JSON object
 * (feed_json.h).
 *
 * Every string that comes from outside aegis (the owner's name, a
 * gc error naming it) goes through client_json_text(): jansson refuses a
 * string that is not UTF-8, and the listing must keep the feed all the
 * same. A feed's name is checked (feed_name_valid()) before it is listed.
 */
#include "feed_json.h"

#include "client.h"

#include <math.h>

static json_t *consumer_json(const feed_consumer_info *c) {
    return json_pack("{s:i, s:b, s:I, s:I, s:I, s:I, s:I, s:f}",
                     "pid", (int)c->pid, "alive", c->alive,
                     "batch_size", (json_int_t)c->batch_size,
                     "epoch", (json_int_t)c->epoch,
                     "position", (json_int_t)c->pos,
                     "lag", (json_int_t)c->lag,
                     "batches", (json_int_t)c->batches,
                     /* to the millisecond, as the table shows it:
                      * printed with FEED_JSON_FLAGS, it reads 0.1, not
                      * 0.10000000000000001 */
                     "idle_s", round(c->idle_s * 1000.0) / 1000.0);
}

json_t *feed_json(const feed_info *fi) {
    json_t *consumers = json_array();
    for (int i = 0; i < fi->nconsumers; i++)
        json_array_append_new(consumers, consumer_json(&fi->consumers[i]));
    json_t *corrupt = fi->corrupt[0] ? client_json_text(fi->corrupt)
                                     : json_null();
    return json_pack("{s:s, s:o?, s:i, s:s, s:o?, s:I, s:I, s:I, s:I, s:I, "
                     "s:o?}",
                     "name", fi->name, "owner", client_json_text(fi->owner),
                     "producer_pid", (int)fi->producer_pid,
                     "producer", feed_producer_state(fi),
                     "corrupt", corrupt, "epoch", (json_int_t)fi->epoch,
                     "epoch_batches", (json_int_t)fi->epoch_index,
                     "published", (json_int_t)fi->head,
                     "slots", (json_int_t)fi->slots,
                     "bytes", (json_int_t)fi->bytes,
                     "consumers", consumers);
}

json_t *feed_gc_json(const feed_info *fi) {
    char why[160];
    const char *failure = feed_gc_failure(fi, why, sizeof why);
    json_t *out = json_pack("{s:s, s:o?, s:b}", "name", fi->name,
                            "owner", client_json_text(fi->owner),
                            "removed", !failure);
    if (out && failure)
        json_object_set_new(out, "error", client_json_text(failure));
    return out;
}
