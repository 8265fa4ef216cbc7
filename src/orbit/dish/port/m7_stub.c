/* m7_stub.c -- the board's side of dish_platform.h, stubbed: FreeRTOS and
 * libcsp are not in Debian, so each function here does the least that
 * lets the runtime run, and says what it calls on the real board. The
 * stub board has a GNSS fix from the start, pipelines that finish at
 * once, nodes that answer every parameter with 0, and a clock that jumps
 * to each wait's deadline. */
#include <string.h>

#include "dish.h"
#include "m7_port.h"

static int64_t clock_ms;     /* the tick count, in ms */
static int last_pipe_status; /* DISH_PIPE_* of the last start */
static dish_tlm last_tlm;    /* the last report, for the task's outcome */

/* Board: xTaskGetTickCount() * portTICK_PERIOD_MS, widened to 64 bits
 * across the 32-bit tick counter's wraps. */
static int64_t now_ms(void *ctx) {
    (void)ctx;
    return clock_ms;
}

/* Board: xEventGroupWaitBits on the DISH event group (bits set by the
 * GNSS driver, the CSP parameter server and DIPP's replies), clearing
 * them, with a timeout of pdMS_TO_TICKS(until_ms - now). The stub has no
 * event sources: the time comes (waits then poll). */
static unsigned wait_event(void *ctx, int64_t until_ms) {
    (void)ctx;
    if (until_ms > clock_ms)
        clock_ms = until_ms;
    return 0;
}

/* Board: libcsp's parameter client, a pull of one parameter from the
 * node over CSP with a timeout; -1 when the node does not answer. */
static int param_get(void *ctx, int node, int id, int32_t *v) {
    (void)ctx, (void)node, (void)id;
    *v = 0;
    return 0;
}

/* Board: libcsp's parameter client, a push of one parameter. */
static int param_set(void *ctx, int node, int id, int32_t v) {
    (void)ctx, (void)node, (void)id, (void)v;
    return 0;
}

/* Board: the GNSS driver's latest fix (its UART parser fills it under a
 * mutex), with GNSS time in ms. */
static void gnss(void *ctx, dish_fix *fix) {
    (void)ctx;
    *fix = (dish_fix){.valid = 1, .lat = 78 * DISH_FIX_ONE, .lon = 15 * DISH_FIX_ONE,
                      .time_ms = clock_ms};
}

/* Board: the GPIO of the main processor's power switch, with its boot
 * and shutdown handshake. */
static void power(void *ctx, int awake) {
    (void)ctx, (void)awake;
}

/* Board: a DIPP command over CSP to the main processor, "run pipeline
 * N", and its reply. */
static int pipe_start(void *ctx, int pipeline) {
    (void)ctx, (void)pipeline;
    last_pipe_status = DISH_PIPE_OK;
    return 0;
}

/* Board: the status DIPP last reported for the pipeline. */
static int pipe_status(void *ctx, int pipeline) {
    (void)ctx, (void)pipeline;
    return last_pipe_status;
}

/* Board: one CSP packet to the telemetry node (csp_sendto). */
static void telemetry(void *ctx, const dish_tlm *t) {
    (void)ctx;
    last_tlm = *t;
}

const dish_platform *m7_platform(void) {
    static const dish_platform pl = {NULL, now_ms, wait_event, param_get, param_set,
                                     gnss, power, pipe_start, pipe_status, telemetry};
    return &pl;
}

/* `dish compile` of this procedure pair, as the ground would uplink it:
 *   slot 1
 *   proc survey() {
 *     wait hasfix within 600 else {
 *       return -1
 *     }
 *     let good = 0
 *     repeat 3 {
 *       good = good + capture(1)
 *       sleep 60
 *     }
 *     tm(1, good)
 *     return good
 *   }
 *   proc capture(p) {
 *     wake
 *     let ok = 0
 *     if start(p) == 0 {
 *       wait pipe(p) != 0 within 120
 *       ok = pipe(p) == 1
 *     }
 *     suspend
 *     return ok
 *   } */
static const uint8_t survey_image[] = {
    0x44, 0x49, 0x53, 0x48, 0x01, 0x02, 0x66, 0x00, 0xd0, 0xdc, 0xb2, 0x37,
    0x01, 0x00, 0x01, 0x01, 0x00, 0x00, 0x3a, 0x00, 0x02, 0x01, 0x02, 0x00,
    0x3a, 0x00, 0x2c, 0x00, 0x01, 0x58, 0x02, 0x00, 0x00, 0x1c, 0x23, 0x1d,
    0x06, 0x00, 0x10, 0x00, 0x02, 0x16, 0x13, 0x00, 0x00, 0xff, 0x21, 0x00,
    0x00, 0x03, 0x00, 0x18, 0x00, 0x03, 0x00, 0x19, 0x00, 0x2f, 0x00, 0x02,
    0x00, 0x00, 0x01, 0x20, 0x02, 0x01, 0x05, 0x03, 0x00, 0x00, 0x3c, 0x1e,
    0x1a, 0x1b, 0x00, 0x00, 0x01, 0x02, 0x00, 0x2d, 0x02, 0x00, 0x21, 0x00,
    0x00, 0x21, 0x2b, 0x00, 0x00, 0x03, 0x01, 0x02, 0x00, 0x29, 0x00, 0x00,
    0x0c, 0x17, 0x25, 0x00, 0x00, 0x78, 0x1c, 0x02, 0x00, 0x2a, 0x00, 0x00,
    0x0d, 0x1d, 0x11, 0x00, 0x1d, 0x00, 0x08, 0x02, 0x00, 0x2a, 0x00, 0x01,
    0x0c, 0x03, 0x01, 0x2c, 0x02, 0x01, 0x21, 0x00, 0x00, 0x21,
};

/* Board: the uplink handler's reassembled image, from DISH_PACKET-byte
 * chunks over CSP. The stub has the one image above, handed out once. */
size_t m7_uplink(uint8_t *img, size_t cap) {
    static int taken;
    if (taken || cap < sizeof survey_image)
        return 0;
    taken = 1;
    memcpy(img, survey_image, sizeof survey_image);
    return sizeof survey_image;
}

int32_t m7_last_result(void) {
    return last_tlm.kind == DISH_TLM_END ? last_tlm.value : INT32_MIN;
}
