/* dish_vm.h -- the DISH runtime: procedure slots, up to DISH_MAX_RUNS
 * runs each a coroutine, stepped by one scheduler. The whole state is one
 * struct the caller places (static on the board): nothing is allocated,
 * before or after start-up. A run holds only what its procedure needs:
 * its arena is a range of one shared pool, exactly the verifier's
 * worst-case need of its call chain; a slot's code is a range of one
 * shared code pool. */
#ifndef DISH_VM_H
#define DISH_VM_H

#include "dish.h"
#include "dish_platform.h"
#include "dish_verify.h"

#define DISH_BUDGET 2000  /* instructions a run executes before others go */
#define DISH_POLL_MS 1000 /* a wait on the clock re-checks as each second turns */
#define DISH_DRIFT_REPORT_MS 50 /* a correction this large is reported */
#define DISH_DRIFT_PPM 100      /* the local clock's worst drift, for the bound */

/* The arena pool: every run's frames, counters and operand stacks. A run
 * takes its need (at most DISH_ARENA_WORDS, the verifier's cap) when it
 * starts, first fit, and gives it back when it ends. 16 x 256 words, the
 * space the runtime set aside when each run had a fixed arena: 16 runs
 * at the cap, started one after another, all fit, so what started before
 * is refused for room only when the pool is fragmented (no free range as
 * long as the need); runs of typical size (the ten example procedures
 * need 2 to 14 words) leave most of it free. */
#define DISH_POOL_WORDS (DISH_MAX_RUNS * DISH_ARENA_WORDS)
/* The code pool: every slot's bytecode, packed (a delete closes its gap).
 * 8 KiB, against 50 x 512 bytes before: all 50 slots filled at an average
 * of 163 bytes, where the ten examples' 12 procedures average 79; or two
 * images of the largest size an upload may carry. */
#define DISH_CODE_POOL 8192

_Static_assert(DISH_POOL_WORDS <= UINT16_MAX && DISH_CODE_POOL <= UINT16_MAX,
               "pool offsets are 16-bit");

/* dish_vm_start's refusals. */
#define DISH_START_NOPROC (-1) /* an empty slot or the wrong argument count */
#define DISH_START_BUSY (-2)   /* all DISH_MAX_RUNS runs busy */
#define DISH_START_NOROOM (-3) /* no free range of the pool as long as its need */

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
    uint16_t pc, base; /* base: first local, as an offset into the run's arena */
} dish_frame;

typedef enum dish_rstate {
    DISH_R_FREE, DISH_R_READY, DISH_R_WAIT, DISH_R_SLEEP
} dish_rstate;

typedef struct dish_run {
    dish_rstate state;
    int nfr;
    dish_frame fr[DISH_MAX_DEPTH];
    uint16_t sp;               /* next free word of its arena */
    uint16_t arena_at, arena_words; /* its arena: pool[arena_at..+arena_words) */
    unsigned mask;             /* a wait's events */
    int64_t deadline, next_poll, wake; /* local ms */
    int wake_abs;              /* wake is GNSS-time ms (sleep until) */
    /* Instructions executed since the start, waits' re-checks included:
     * what the tests and fuzzing hold against the verifier's bound
     * (dish_image.steps and .recheck), which nothing else checks at run
     * time. Kept after the run ends, until its index starts another. */
    uint32_t executed;
} dish_run;

typedef struct dish_slot {
    dish_slotinfo info;
    dish_proc p;     /* p.off: where its code starts in code_pool */
    /* CALL instructions on board naming this slot: a procedure calling it
     * twice counts twice. Wide enough for a code pool of nothing but calls
     * (dish_vm.c asserts it). */
    uint16_t call_sites;
} dish_slot;

typedef struct dish_vm {
    const dish_platform *pl;
    dish_slot slots[DISH_SLOTS];
    dish_run runs[DISH_MAX_RUNS];
    int32_t pool[DISH_POOL_WORDS];
    uint8_t code_pool[DISH_CODE_POOL]; /* the slots' code, packed from 0 */
    uint16_t code_used;
    unsigned events; /* raised by runs (a parameter set), for the others */
    dish_fix fix;
    int synced;
    int64_t offset_ms, last_fix_local, max_drift_ms;
} dish_vm;

void dish_vm_init(dish_vm *vm, const dish_platform *pl);
/* Verifies img against the slots already held and installs its
 * procedures: 0, or -1 with the reason in err (nothing installed): the
 * verifier's, or too little room left in the code pool. */
int dish_vm_load(dish_vm *vm, const uint8_t *img, size_t len, char *err, size_t errlen);
/* Empties slot and frees its code: 0, or -1 when a procedure on board
 * calls it or a run is inside it. */
int dish_vm_delete(dish_vm *vm, unsigned slot, char *err, size_t errlen);
/* Starts the procedure in slot with args, its arena taken from the pool:
 * the run's index, or a DISH_START_* refusal (nothing started). */
int dish_vm_start(dish_vm *vm, unsigned slot, const int32_t *args, int nargs);
/* Writes into err why a start of slot was refused with rc (a
 * DISH_START_*), as a sentence naming the slot and the numbers. */
void dish_vm_refusal(const dish_vm *vm, unsigned slot, int rc, char *err, size_t errlen);
/* Stops run r (a fault telemetry with DISH_FAULT_KILLED). */
void dish_vm_stop(dish_vm *vm, int r);
/* Stops every run inside the procedure in slot, wherever it runs: those
 * started there and those that called into it from another slot's
 * procedure (a run is one coroutine: the callee's frame cannot end
 * alone, its caller waits for its value), each as dish_vm_stop does.
 * How many; afterwards no run is inside slot, so a delete is not refused
 * for "is running". */
int dish_vm_stop_slot(dish_vm *vm, unsigned slot);
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
/* The local time (ms) at which the clock's second, what `now` reads,
 * next turns after local time now: when a wait on the clock re-checks. */
int64_t dish_vm_next_second(const dish_vm *vm, int64_t now);
/* How far the clock may be off now: 0 right after a fix, growing with
 * DISH_DRIFT_PPM while there is none; -1 before the first fix. */
int64_t dish_vm_clock_bound(const dish_vm *vm);

#endif
