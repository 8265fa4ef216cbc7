/* m7_task.c -- the co-processor's DISH task: the runtime's whole state
 * placed statically (nothing allocated, before or after start-up), an
 * image taken from the uplink, verified and installed by dish_vm_load,
 * its first procedure started, and the scheduler driven by the
 * platform's clock and events. On the board this is the body of a task
 * created with xTaskCreateStatic that never ends: between waits it takes
 * the next uplinked image. Here it ends once no run is left, so that the
 * host can run it (tests/orbit/dish/test_dish_port.c). */
#include <stdio.h>

#include "dish_vm.h"
#include "m7_port.h"

/* How long the stub board runs at most: a wait's longest timeout. */
#define M7_HORIZON_MS ((int64_t)DISH_MAX_WAIT_S * 1000)

static dish_vm vm;

/* Installs the next uplinked image and starts its first procedure. */
static int take_uplink(char *err, size_t errlen) {
    static uint8_t img[DISH_MAX_IMAGE];
    size_t n = m7_uplink(img, sizeof img);
    if (!n) {
        snprintf(err, errlen, "no image uplinked");
        return -1;
    }
    if (dish_vm_load(&vm, img, n, err, errlen))
        return -1;
    int rc = dish_vm_start(&vm, img[DISH_HDR], NULL, 0);
    if (rc < 0) {
        dish_vm_refusal(&vm, img[DISH_HDR], rc, err, errlen);
        return -1;
    }
    return 0;
}

int m7_dish_task(char *err, size_t errlen) {
    dish_vm_init(&vm, m7_platform());
    if (take_uplink(err, errlen))
        return -1;
    if (dish_vm_run(&vm, M7_HORIZON_MS)) {
        snprintf(err, errlen, "%d runs still alive after %lld ms", dish_vm_alive(&vm),
                 (long long)M7_HORIZON_MS);
        return -1;
    }
    return 0;
}
