/* camera.h -- a simulated payload camera: synthetic Earth-like scenes
 * (sea, land by height, clouds) as the flight camera's raw RGGB Bayer
 * frames, 4512x4512 by default. The same seed gives the same frame. */
#ifndef DIPP_CAMERA_H
#define DIPP_CAMERA_H

#include <stdint.h>

#include "batch.h"

#define CAMERA_SIZE 4512

/* Adds one size x size Bayer frame of scene seed to b (an empty batch
 * with room). 0, or -1 when b has no room. */
int camera_shoot(dbatch *b, uint32_t size, uint32_t seed);

#endif
