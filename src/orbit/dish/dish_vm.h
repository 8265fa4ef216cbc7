/* dish_vm.h -- the DISH runtime: procedure slots, up to DISH_MAX_RUNS
 * runs each a coroutine with its own fixed arena, stepped by one
 * scheduler. The whole state is one struct the caller places (static on
 * the board): nothing is allocated, before or after start-up. */
#ifndef DISH_VM_H
#define DISH_VM_H

#include "dish.h"
#include "dish_platform.h"
#include "dish_verify.h"

#define DISH_BUDGET 2000  /* instructions a run executes before others go */
#define DISH_POLL_MS 1000 /* re-check of a wait on the clock (no event for it) */
#define DISH_DRIFT_REPORT_MS 50 /* a correction this large is reported */
#define DISH_DRIFT_PPM 100      /* the local clock's worst drift, for the bound */

/* Why a run was stopped (DISH_TLM_FAULT's code). */
typedef enum dish_fault {
    DISH_FAULT_DIV0 = 1,
    DISH_FAULT_STACK,  /* arena or frame limit: the verifier should prevent */
    DISH_FAULT_SLOT,   /* call of an empty slot */
    DISH_FAULT_PARAM,  /* a node did not answer */
    DISH_FAULT_KILLED, /* dish_vm_stop */
} dish_fault;

typedef struct dish_frame {
    uint8_t slot;
    uint16_t pc, base; /* base: first local in the arena */
} dish_frame;

typedef enum dish_rstate {
    DISH_R_FREE, DISH_R_READY, DISH_R_WAIT, DISH_R_SLEEP
} dish_rstate;

typedef struct dish_run {
    dish_rstate state;
    int nfr;
    dish_frame fr[DISH_MAX_DEPTH];
    uint16_t sp;               /* next free arena word */
    uint16_t peak;             /* the most arena words this run has held */
    unsigned mask;             /* a wait's events */
    int64_t deadline, next_poll, wake; /* local ms */
    int wake_abs;              /* wake is GNSS-time ms (sleep until) */
    int32_t arena[DISH_ARENA_WORDS];
} dish_run;

typedef struct dish_slot {
    dish_slotinfo info;
    dish_proc p;
    uint8_t callers; /* procedures on board that call this one */
    uint8_t code[DISH_MAX_CODE];
} dish_slot;

typedef struct dish_vm {
    const dish_platform *pl;
    dish_slot slots[DISH_SLOTS];
    dish_run runs[DISH_MAX_RUNS];
    unsigned events; /* raised by runs (a parameter set), for the others */
    dish_fix fix;
    int synced;
    int64_t offset_ms, last_fix_local, max_drift_ms;
} dish_vm;

void dish_vm_init(dish_vm *vm, const dish_platform *pl);
/* Verifies img against the slots already held and installs its
 * procedures: 0, or -1 with the reason in err (nothing installed). */
int dish_vm_load(dish_vm *vm, const uint8_t *img, size_t len, char *err, size_t errlen);
/* Empties slot: 0, or -1 when a procedure on board calls it or a run is
 * inside it. */
int dish_vm_delete(dish_vm *vm, unsigned slot, char *err, size_t errlen);
/* Starts the procedure in slot with args: the run's index, or -1 (empty
 * slot, wrong argument count, all runs busy). */
int dish_vm_start(dish_vm *vm, unsigned slot, const int32_t *args, int nargs);
/* Stops run r (a fault telemetry with DISH_FAULT_KILLED). */
void dish_vm_stop(dish_vm *vm, int r);
/* One scheduler pass: handles events (DISH_EV_*), wakes the runs they or
 * the clock concern, steps every ready run. */
void dish_vm_tick(dish_vm *vm, unsigned events);
/* The local time the next pass is due (now when work is pending), or
 * INT64_MAX when no run is alive. */
int64_t dish_vm_next(const dish_vm *vm);
/* Drives ticks and the platform's wait until local time until_ms or until
 * no run is alive: the runs still alive. */
int dish_vm_run(dish_vm *vm, int64_t until_ms);
int dish_vm_alive(const dish_vm *vm);
/* The runtime's clock in ms: GNSS time once a fix set it, else local. */
int64_t dish_vm_clock(const dish_vm *vm);
/* How far the clock may be off now: 0 right after a fix, growing with
 * DISH_DRIFT_PPM while there is none; -1 before the first fix. */
int64_t dish_vm_clock_bound(const dish_vm *vm);

#endif
