/* camera.c -- the simulated camera's scenes: value noise summed over
 * octaves (fractal Brownian motion) makes a height field, sea below a
 * level and land coloured by height above it; a second field, thresholded
 * softly, lays clouds over it (white, opaque at their cores). Each pixel
 * then keeps the one colour its RGGB Bayer filter passes. */
#include "camera.h"

static uint32_t hash(uint32_t x, uint32_t y, uint32_t seed) {
    uint32_t h = x * 374761393u + y * 668265263u + seed * 2246822519u;
    h = (h ^ (h >> 13)) * 1274126177u;
    return h ^ (h >> 16);
}

static float lattice(int x, int y, uint32_t seed) {
    return (float)(hash((uint32_t)x, (uint32_t)y, seed) & 0xFFFF) / 65535.0f;
}

static float smooth(float t) {
    return t * t * (3.0f - 2.0f * t);
}

static float value_noise(float x, float y, uint32_t seed) {
    int ix = (int)x, iy = (int)y;
    float fx = smooth(x - (float)ix), fy = smooth(y - (float)iy);
    float a = lattice(ix, iy, seed), b = lattice(ix + 1, iy, seed);
    float c = lattice(ix, iy + 1, seed), d = lattice(ix + 1, iy + 1, seed);
    return (a + (b - a) * fx) * (1 - fy) + (c + (d - c) * fx) * fy;
}

/* 0..1, features about scale pixels across. */
static float fbm(float x, float y, float scale, uint32_t seed) {
    float sum = 0, amp = 0.5f, norm = 0;
    for (int o = 0; o < 4; o++, amp *= 0.5f, scale *= 0.5f) {
        sum += amp * value_noise(x / scale, y / scale, seed + (uint32_t)o);
        norm += amp;
    }
    return sum / norm;
}

static void ground(float h, float rgb[3]) {
    if (h < 0.5f) { /* sea: darker where deeper */
        rgb[0] = 10 + 40 * h, rgb[1] = 40 + 80 * h, rgb[2] = 80 + 100 * h;
    } else if (h < 0.68f) { /* vegetation */
        rgb[0] = 50 + 100 * (h - 0.5f), rgb[1] = 90 + 60 * (h - 0.5f), rgb[2] = 40;
    } else { /* bare ground, rock */
        rgb[0] = 120 + 150 * (h - 0.68f), rgb[1] = 100 + 120 * (h - 0.68f),
        rgb[2] = 70 + 120 * (h - 0.68f);
    }
}

static uint8_t pixel(uint32_t x, uint32_t y, uint32_t size, uint32_t seed) {
    float fx = (float)x, fy = (float)y, big = (float)size / 3.0f;
    float rgb[3];
    ground(fbm(fx, fy, big, seed), rgb);
    float c = (fbm(fx, fy, big * 0.7f, seed + 101u) - 0.52f) * 6.0f;
    float cover = c < 0 ? 0 : c > 1 ? 1 : c;
    int channel = (y & 1u) + (x & 1u); /* R 0, G 1, B 2 */
    float v = rgb[channel] * (1 - cover) + 245.0f * cover;
    return (uint8_t)(v > 255 ? 255 : v);
}

int camera_shoot(dbatch *b, uint32_t size, uint32_t seed) {
    dipp_image *img = b->api.add(&b->api, size, size, DIPP_FMT_BAYER_RGGB8,
                                 (uint64_t)size * size);
    if (!img)
        return -1;
    for (uint32_t y = 0; y < size; y++)
        for (uint32_t x = 0; x < size; x++)
            img->data[(uint64_t)y * size + x] = pixel(x, y, size, seed);
    return 0;
}
