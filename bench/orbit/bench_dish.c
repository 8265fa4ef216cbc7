/* bench_dish.c -- DISH against Lua 5.4 (issue 32): the ten imaging
 * procedures of data/orbit/procedures, each in DISH and in plain Lua, run
 * on the same simulated satellite (dish_sim) through the same board
 * interface (dish_platform.h): DISH on its VM, Lua on dish_lua_host.c.
 * For each procedure: the lexical tokens of the two sources (goal: DISH
 * <= 1.5 x Lua), the bytes each runtime holds at its peak while the
 * procedure runs (goal: DISH <= 1/10 of Lua), and whether the two runs
 * left the same telemetry and awake intervals in every scenario. Then a
 * simulated day of 15 orbits with two targets per orbit: the main
 * processor's awake time against the time the pipelines ran (goal: <=
 * 1.2 x). Exit 0 only when every goal holds and the runs agree.
 *
 * Usage: bench_dish PROC_DIR DAY_DIR (DAY_DIR holds day_target.dish and
 * day_target.lua). */
#include <lua.h>
#include <stdio.h>
#include <string.h>

#include "dish_vs_lua.h"

#define GOAL_TOKENS 1.5
#define GOAL_MEMORY 0.1
#define GOAL_POWER 1.2

typedef struct row {
    int dish_tok, lua_tok;
    dvl_dish_mem dm;         /* the DISH scenario with the most bytes */
    dish_lua_mem lm;         /* the Lua scenario with the most bytes */
    int agree, runs;
    char why[640];           /* the first disagreement */
} row;

static int measure(const char *dir, const char *name, const dvl_scenario *sc, row *r) {
    static uint8_t img[DISH_MAX_IMAGE];
    static dvl_outcome od, ol;
    char dpath[512], lpath[512], err[512];
    snprintf(dpath, sizeof dpath, "%s/%s.dish", dir, name);
    snprintf(lpath, sizeof lpath, "%s/%s.lua", dir, name);
    memset(r, 0, sizeof *r);
    int len = dvl_compile(dpath, img, &r->dish_tok, err, sizeof err);
    r->lua_tok = dvl_lua_tokens(lpath, err, sizeof err);
    if (len < 0 || r->lua_tok < 0) {
        fprintf(stderr, "bench_dish: %s\n", err);
        return -1;
    }
    for (int s = 0; s < DVL_NSCENARIOS; s++) {
        dvl_dish_mem dm;
        dish_lua_mem lm;
        if (dvl_run_dish(img, len, &sc[s], &od, &dm)) {
            fprintf(stderr, "bench_dish: %s: %s\n", dpath, od.err);
            return -1;
        }
        if (dvl_run_lua(lpath, name, &sc[s], &ol, &lm)) {
            fprintf(stderr, "bench_dish: %s\n", ol.err);
            return -1;
        }
        if (dm.total > r->dm.total)
            r->dm = dm;
        if (lm.peak > r->lm.peak)
            r->lm = lm;
        char why[512];
        r->runs++;
        if (!dvl_compare(&od, &ol, why, sizeof why))
            r->agree++;
        else if (!r->why[0])
            snprintf(r->why, sizeof r->why, "%s, %s: %s", name, sc[s].name, why);
        if (ol.ended < 0 && !sc[s].down_nodes) /* a Lua error where DISH had none */
            fprintf(stderr, "bench_dish: %s (%s): %s\n", lpath, sc[s].name, ol.err);
    }
    return 0;
}

static void print_scenarios(const dvl_scenario *sc) {
    printf("Scenarios (each procedure runs in both on a fresh simulation of each, up to %d "
           "simulated hours):\n", DVL_HOURS);
    for (int s = 0; s < DVL_NSCENARIOS; s++)
        printf("  %d. %s (start at %.0f s)\n", s + 1, sc[s].name, (double)sc[s].start_ms / 1000);
    printf("\n");
}

static int day(const char *daydir, double *ratio, int *agree) {
    static dish_tlm td[256], tl[256];
    char dpath[512], lpath[512];
    dvl_day dd, dl;
    int nd, nl;
    snprintf(dpath, sizeof dpath, "%s/day_target.dish", daydir);
    snprintf(lpath, sizeof lpath, "%s/day_target.lua", daydir);
    if (dvl_run_day(dpath, NULL, &dd, td, 256, &nd) || dvl_run_day(NULL, lpath, &dl, tl, 256, &nl)) {
        fprintf(stderr, "bench_dish: power day: %s%s\n", dd.err, dl.err);
        return -1;
    }
    *agree = nd == nl;
    for (int k = 0; *agree && k < nd; k++)
        *agree = td[k].kind == tl[k].kind && td[k].t_ms == tl[k].t_ms &&
                 td[k].code == tl[k].code && td[k].value == tl[k].value;
    *agree = *agree && dd.awake_ms == dl.awake_ms && dd.nawake == dl.nawake;
    printf("Power day: %d orbits of %.0f min, %d targets (two per orbit, boxes 1.5 x 3 degrees "
           "on the ground track), one run each, started when the previous ended;\n"
           "need = the sum over pipelines of start to end (the simulator's pipe_ms, 20 s, each)\n",
           DVL_DAY_ORBITS, DVL_ORBIT_MS / 60000.0, DVL_DAY_TARGETS);
    const dvl_day *v[2] = {&dd, &dl};
    const char *who[2] = {"DISH", "Lua "};
    for (int k = 0; k < 2; k++) {
        double rt = v[k]->need_ms ? (double)v[k]->awake_ms / (double)v[k]->need_ms : 0;
        printf("  %s: %d captures (%d good), %d targets missed; awake %.1f s in %d intervals, "
               "need %.1f s: %.3f\n", who[k], v[k]->captures, v[k]->ok, v[k]->missed,
               (double)v[k]->awake_ms / 1000.0, v[k]->nawake, (double)v[k]->need_ms / 1000.0,
               rt);
        if (!k)
            *ratio = v[k]->need_ms && v[k]->captures == DVL_DAY_TARGETS ? rt : 1e9;
    }
    printf("  same telemetry and awake intervals: %s\n\n", *agree ? "yes" : "NO");
    return 0;
}

int main(int argc, char **argv) {
    static row rows[DVL_NPROCS];
    dvl_scenario sc[DVL_NSCENARIOS];
    if (argc != 3) {
        fputs("usage: bench_dish PROC_DIR DAY_DIR\n", stderr);
        return 2;
    }
    dvl_scenarios(sc);
    printf("DISH against %s: the ten procedures of %s, in DISH on its VM and in Lua on\n"
           "dish_lua_host (base library only), on the same simulated satellite.\n\n",
           LUA_RELEASE, argv[1]);
    print_scenarios(sc);
    double max_tok = 0, max_mem = 0, max_own = 0;
    int agree = 0, runs = 0;
    printf("%-17s %6s %6s %6s | %6s %6s %6s | %s\n", "procedure", "DISH", "Lua", "ratio",
           "DISH B", "Lua B", "ratio", "same telemetry");
    printf("%-17s %20s | %20s |\n", "", "tokens", "peak bytes");
    for (int k = 0; k < DVL_NPROCS; k++) {
        row *r = &rows[k];
        if (measure(argv[1], dvl_procs[k], sc, r))
            return 1;
        double tr = (double)r->dish_tok / r->lua_tok, mr = (double)r->dm.total / (double)r->lm.peak;
        max_tok = tr > max_tok ? tr : max_tok;
        max_mem = mr > max_mem ? mr : max_mem;
        agree += r->agree;
        runs += r->runs;
        printf("%-17s %6d %6d %6.2f | %6zu %6zu %6.3f | %d of %d\n", dvl_procs[k], r->dish_tok,
               r->lua_tok, tr, r->dm.total, r->lm.peak, mr, r->agree, r->runs);
    }
    for (int k = 0; k < DVL_NPROCS; k++)
        if (rows[k].why[0])
            printf("  DIFFERS: %s\n", rows[k].why);

    printf("\nDISH bytes (the scenario with the most): the run's state + its arena, reserved "
           "from the pool at\nthe start (the verifier's worst-case need of its call chain, "
           "words x 4) + its bytecode and its\ncallees' + their slot records + the VM's "
           "fixed state. Lua: bytes held by the state's allocator:\nthe state with the base "
           "library and the API alone (base), with the procedure loaded and its\ncoroutine "
           "made, after a full collection (floor), and at most during the run (peak).\n");
    printf("%-17s %4s %8s %5s %5s %3s %6s | %6s %6s %6s %7s | %s\n", "procedure", "run",
           "arena", "code", "slots", "vm", "total", "base", "floor", "peak", "allocs", "own");
    for (int k = 0; k < DVL_NPROCS; k++) {
        const row *r = &rows[k];
        char arena[24];
        snprintf(arena, sizeof arena, "%zu=%dw", r->dm.arena, r->dm.need_words);
        double own = (double)(r->dm.total - r->dm.vm) / (double)(r->lm.peak - r->lm.base);
        max_own = own > max_own ? own : max_own;
        printf("%-17s %4zu %8s %5zu %5zu %3zu %6zu | %6zu %6zu %6zu %7zu | %5.3f\n",
               dvl_procs[k], r->dm.run, arena, r->dm.code, r->dm.slots, r->dm.vm, r->dm.total,
               r->lm.base, r->lm.floor, r->lm.peak, r->lm.allocs, own);
    }
    printf("(arena: bytes = the need in words; own: DISH total less vm against Lua peak less "
           "base,\nwhat each holds beyond what is there before any procedure: at most %.3f, "
           "not a goal)\n\n", max_own);

    double power = 1e9;
    int day_agree = 0;
    if (day(argv[2], &power, &day_agree))
        return 1;

    int ok_tok = max_tok <= GOAL_TOKENS, ok_mem = max_mem <= GOAL_MEMORY,
        ok_pow = power <= GOAL_POWER, ok_agree = agree == runs && day_agree;
    printf("expressiveness: %s (DISH tokens at most %.2f of Lua's; goal <= %.1f for all ten)\n",
           ok_tok ? "PASS" : "FAIL", max_tok, GOAL_TOKENS);
    printf("memory:         %s (DISH bytes at most %.3f of Lua's; goal <= %.1f for all ten)\n",
           ok_mem ? "PASS" : "FAIL", max_mem, GOAL_MEMORY);
    printf("power:          %s (awake %.3f x need over the day; goal <= %.1f, all %d targets "
           "captured)\n", ok_pow ? "PASS" : "FAIL", power < 1e8 ? power : 0, GOAL_POWER,
           DVL_DAY_TARGETS);
    printf("agreement:      %s (%d of %d runs and the day: DISH and Lua left the same "
           "telemetry)\n", ok_agree ? "PASS" : "FAIL", agree, runs);
    return ok_tok && ok_mem && ok_pow && ok_agree ? 0 : 1;
}
