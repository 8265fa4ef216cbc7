/* dish_platform.h -- everything the DISH runtime asks of the board, behind
 * one table of functions, so the VM (dish_vm.c) builds unchanged for the
 * payload's Cortex-M7 under FreeRTOS: a port fills this table with the
 * RTOS's tick, an event group, CSP parameter requests to the other nodes,
 * the GNSS driver, the power switch of the main cores and DIPP's command
 * channel. dish_sim.c fills it with a simulated satellite. */
#ifndef DISH_PLATFORM_H
#define DISH_PLATFORM_H

#include <stdint.h>

/* A GNSS fix: position in degrees as Q16.16, GNSS time in ms. */
typedef struct dish_fix {
    int valid;
    int32_t lat, lon;
    int64_t time_ms;
} dish_fix;

/* What the runtime reports (the platform sends it down the link). */
typedef enum dish_tlm_kind {
    DISH_TLM_USER,  /* tm(code, value) from a procedure */
    DISH_TLM_START, /* a run began: code = its slot */
    DISH_TLM_END,   /* a run ended: value = what its procedure returned */
    DISH_TLM_FAULT, /* a run was stopped: code = dish_fault, value = pc */
    DISH_TLM_CLOCK, /* code 0: clock set from GNSS; 1: drift corrected, value = ms */
} dish_tlm_kind;

typedef struct dish_tlm {
    int64_t t_ms; /* the runtime's clock (GNSS time once set) */
    dish_tlm_kind kind;
    int run, slot;
    int32_t code, value;
} dish_tlm;

typedef struct dish_platform {
    void *ctx;
    /* A monotonic local clock, ms; it may drift against GNSS time. */
    int64_t (*now_ms)(void *ctx);
    /* Blocks until one of the events DISH_EV_* happens or the clock reaches
     * until_ms; returns the events seen (0: the time came). A board
     * without event sources may return 0 at until_ms: waits then poll. */
    unsigned (*wait_event)(void *ctx, int64_t until_ms);
    /* Parameter id of node (over CSP on the board): 0, or -1 when the node
     * does not answer. */
    int (*param_get)(void *ctx, int node, int id, int32_t *v);
    int (*param_set)(void *ctx, int node, int id, int32_t v);
    /* The latest fix; fix->valid 0 without one. */
    void (*gnss)(void *ctx, dish_fix *fix);
    /* Wakes (1) or suspends (0) the main processor. */
    void (*power)(void *ctx, int awake);
    /* Starts DIPP pipeline 1..6: 0, or -1 refused (running, cores asleep). */
    int (*pipe_start)(void *ctx, int pipeline);
    /* DISH_PIPE_* of the pipeline's last start. */
    int (*pipe_status)(void *ctx, int pipeline);
    void (*telemetry)(void *ctx, const dish_tlm *t);
} dish_platform;

#endif
