/* ring.h -- the on-board ring of processed images waiting for a pass:
 * bounded in count and bytes; when full, the image of lowest priority
 * goes (the new one, if it is the lowest). The downlink takes the highest
 * priority first, the oldest of equals first. */
#ifndef DIPP_RING_H
#define DIPP_RING_H

#include <stddef.h>
#include <stdint.h>

#define RING_MAX 256

typedef struct ring_image {
    uint32_t id;
    int32_t priority;
    uint32_t width, height, format;
    uint8_t *bytes;
    size_t len;
} ring_image;

typedef struct ring {
    ring_image img[RING_MAX];
    unsigned count, cap;
    size_t bytes, max_bytes;
    uint32_t next_id;
    uint64_t dropped;
} ring;

void ring_init(ring *r, unsigned cap, size_t max_bytes);
/* Keeps a copy of an image: its id, or 0 when it was the one dropped. */
uint32_t ring_push(ring *r, int32_t priority, uint32_t width, uint32_t height,
                   uint32_t format, const uint8_t *bytes, size_t len);
/* The image to send next, or NULL. */
const ring_image *ring_best(const ring *r);
/* Removes image id (downlinked); 0, or -1 when it is not there. */
int ring_remove(ring *r, uint32_t id);
void ring_free(ring *r);

#endif
