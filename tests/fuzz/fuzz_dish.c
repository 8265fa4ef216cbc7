/* fuzz_dish.c -- a verified DISH image run on a simulated satellite under
 * the rules the verifier promises (fuzz_dish.h): nothing out of its
 * stack or arena, no call of an empty slot, no run past its instruction
 * bound, and the board left as it was once its slots are deleted. */
#include "fuzz_dish.h"

#include "fuzz.h"

#include <string.h>

#include "dish_compile.h"
#include "dish_sim.h"
#include "dish_vm.h"

/* How long one input may run: enough ticks for waits on the clock and on
 * events, sleeps and pipelines to come round (the simulated clock moves a
 * second a tick once the runs wait), enough instructions for loops of
 * thousands; the fuzzer's time goes to new inputs rather than to a run
 * of 10 million instructions, which the bound check sees coming anyway. */
#define FUZZ_DISH_TICKS 3000
#define FUZZ_DISH_INSNS 200000u

static dish_sim sim;
static dish_vm vm;
static dish_platform pl; /* the simulation's, telemetry checked on the way */

/* The faults the verifier's acceptance rules out: the VM's second line
 * caught what the first should have. */
static void check_tlm(void *ctx, const dish_tlm *t) {
    if (t->kind == DISH_TLM_FAULT && (t->code == DISH_FAULT_STACK ||
                                      t->code == DISH_FAULT_SLOT))
        fprintf(stderr, "run %d (slot %d) fault %d at pc %d\n", t->run, t->slot,
                (int)t->code, (int)t->value);
    FUZZ_CHECK(t->kind != DISH_TLM_FAULT || t->code != DISH_FAULT_STACK,
               "a verified image overran its stack, frames or arena");
    FUZZ_CHECK(t->kind != DISH_TLM_FAULT || t->code != DISH_FAULT_SLOT,
               "a verified image called an empty slot");
    sim.pl.telemetry(ctx, t);
}

/* The arguments of procedure k: values at the edges of what arithmetic,
 * loops, waits and pipelines take. */
static void args_of(int k, int nargs, int32_t *args) {
    static const int32_t v[] = {0, 1, -1, INT32_MAX, INT32_MIN, DISH_FIX_ONE, 3, 700000};
    for (int j = 0; j < nargs; j++)
        args[j] = v[(unsigned)(j + k) % (sizeof v / sizeof *v)];
}

/* Run ri, started for procedure proc of im, within its bound as
 * docs/orbit.md states it: the verifier's steps plus, for each time the
 * run went to wait (in it or in a callee), one re-check of the figure
 * the verifier gives the procedure. */
static void check_bound(int ri, const dish_image *im, int proc, uint32_t waits) {
    uint64_t limit = (uint64_t)im->steps[proc] + (uint64_t)waits * im->recheck[proc];
    const dish_run *r = &vm.runs[ri];
    if (r->executed > limit)
        fprintf(stderr, "run %d of slot %u: %u instructions, bound %u + %u waits x %u\n",
                ri, im->proc[proc].slot, r->executed, im->steps[proc], waits,
                (unsigned)im->recheck[proc]);
    FUZZ_CHECK(r->executed <= limit, "a run went past the verifier's instruction bound");
}

/* Starts every procedure of im (at most DISH_MAX_RUNS): which run each
 * got, in started[]. */
static void start_all(const dish_image *im, int *started) {
    for (int k = 0; k < im->nprocs; k++) {
        int32_t args[DISH_MAX_LOCALS];
        args_of(k, im->proc[k].nargs, args);
        started[k] = dish_vm_start(&vm, im->proc[k].slot, args, im->proc[k].nargs);
        /* 16 runs of at most 256 words fit the pool of a board with no run */
        FUZZ_CHECK(started[k] >= 0, "a verified procedure's start refused on an idle board");
    }
}

/* What a run has done so far: its waits (yields at a WAIT) and the count
 * at its last yield of any kind. */
typedef struct progress {
    uint32_t waits, at_yield;
} progress;

/* After a tick, run ri of procedure proc: its whole count within the
 * bound and its waits' re-checks, and the stretch since its last yield
 * within the bound alone (docs/orbit.md, "Between two yields": a stretch
 * that starts by re-checking a wait replaces the evaluation the bound
 * counts). */
static void after_tick(int ri, const dish_image *im, int proc, uint32_t before,
                       progress *p) {
    const dish_run *r = &vm.runs[ri];
    /* a tick ends a run's slice at its first yield */
    int yielded = r->executed != before &&
                  (r->state == DISH_R_WAIT || r->state == DISH_R_SLEEP);
    p->waits += yielded && r->state == DISH_R_WAIT;
    check_bound(ri, im, proc, p->waits);
    if (r->executed - p->at_yield > im->steps[proc])
        fprintf(stderr, "run %d of slot %u: %u instructions since its last yield, "
                "bound %u\n", ri, im->proc[proc].slot, r->executed - p->at_yield,
                im->steps[proc]);
    FUZZ_CHECK(r->executed - p->at_yield <= im->steps[proc],
               "a stretch between two yields longer than the bound");
    if (yielded)
        p->at_yield = r->executed;
}

/* Ticks the runs until none is alive or the limits are reached, each
 * run held to its bound after every tick. */
static void run_all(const dish_image *im, const int *started) {
    progress p[DISH_MAX_PROCS] = {{0, 0}};
    uint32_t total = 0;
    unsigned ev = 0;
    for (int tick = 0; tick < FUZZ_DISH_TICKS && total < FUZZ_DISH_INSNS; tick++) {
        uint32_t before[DISH_MAX_PROCS];
        for (int k = 0; k < im->nprocs; k++)
            before[k] = vm.runs[started[k]].executed;
        dish_vm_tick(&vm, ev);
        for (int k = 0; k < im->nprocs; k++) {
            total += vm.runs[started[k]].executed - before[k];
            after_tick(started[k], im, k, before[k], &p[k]);
        }
        if (!dish_vm_alive(&vm))
            return;
        ev = pl.wait_event(pl.ctx, dish_vm_next(&vm));
    }
}

/* The board before the image came: its code pool's use and each slot's
 * calls, which deleting the image must give back exactly. */
static uint16_t board_code;
static uint16_t board_calls[DISH_SLOTS];

/* Stops the runs and deletes the image's slots, callers before callees:
 * every one must go, the code pool and the call counts back to what the
 * board had. */
static void delete_all(const dish_image *im) {
    char err[256];
    for (int k = 0; k < im->nprocs; k++)
        dish_vm_stop_slot(&vm, im->proc[k].slot);
    int left = im->nprocs;
    for (int pass = 0; pass < im->nprocs && left; pass++)
        for (int k = 0; k < im->nprocs; k++)
            if (vm.slots[im->proc[k].slot].info.used &&
                dish_vm_delete(&vm, im->proc[k].slot, err, sizeof err) == 0)
                left--;
    FUZZ_CHECK(left == 0, "a slot of a verified image could not be deleted");
    FUZZ_CHECK(vm.code_used == board_code, "code left in the pool after the deletes");
    for (int s = 0; s < DISH_SLOTS; s++)
        FUZZ_CHECK(vm.slots[s].call_sites == board_calls[s],
                   "calls counted into the board after the deletes");
}

/* The library a board may hold: a wait with a long condition in slot 48
 * (an argument, its re-check 10), a loop calling it in slot 49. */
static const char library[] =
    "slot 48\n"
    "proc lib_wait(t) {\n"
    "  wait param(2, 1) == 99 and param(3, 1) == t and hasfix within t else { return 0 }\n"
    "  return 1\n"
    "}\n"
    "proc lib_loop() {\n"
    "  let n = 0\n"
    "  repeat 3 as i { n = n + lib_wait(i) }\n"
    "  return n\n"
    "}\n";

void fuzz_dish_board(int with_library) {
    static uint8_t img[DISH_MAX_IMAGE];
    static int n; /* the library compiled once */
    char err[256];
    dish_sim_init(&sim);
    pl = sim.pl;
    pl.telemetry = check_tlm;
    dish_vm_init(&vm, &pl);
    if (with_library && !n) {
        n = dish_compile("library.dish", library, sizeof library - 1, img, sizeof img,
                         err, sizeof err);
        if (n < 0)
            fprintf(stderr, "%s\n", err);
        FUZZ_CHECK(n > 0, "the library does not compile");
    }
    if (with_library)
        FUZZ_CHECK(dish_vm_load(&vm, img, (size_t)n, err, sizeof err) == 0,
                   "the library does not load");
    board_code = vm.code_used;
    for (int s = 0; s < DISH_SLOTS; s++)
        board_calls[s] = vm.slots[s].call_sites;
}

void fuzz_dish_onboard(dish_slotinfo *onboard) {
    for (int s = 0; s < DISH_SLOTS; s++)
        onboard[s] = vm.slots[s].info;
}

void fuzz_dish_run(const uint8_t *img, size_t len, const dish_image *im) {
    char err[256];
    int started[DISH_MAX_PROCS];
    int rc = dish_vm_load(&vm, img, len, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s\n", err);
    FUZZ_CHECK(rc == 0, "a verified image refused by the board it was verified against");
    FUZZ_CHECK(dish_vm_load(&vm, img, len, err, sizeof err) != 0,
               "an image loaded a second time over its own slots");
    start_all(im, started);
    run_all(im, started);
    delete_all(im);
}
