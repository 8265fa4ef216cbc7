/* m7_main.c -- the Cortex-M7 image's entry. On the board, once clocks
 * and memories are set up, main creates the DISH task with
 * xTaskCreateStatic (its stack and control block static, as the
 * runtime's state) and starts the FreeRTOS scheduler; without FreeRTOS,
 * main runs the task itself. Linked against newlib-nano and nosys
 * (tests/orbit/dish/m7_build.sh), it shows the runtime needs nothing of
 * the board beyond dish_platform.h and the C library's string functions,
 * and no heap. */
#include "m7_port.h"

int main(void) {
    static char err[200]; /* a debugger reads why the task stopped */
    return m7_dish_task(err, sizeof err) ? 1 : 0;
}
