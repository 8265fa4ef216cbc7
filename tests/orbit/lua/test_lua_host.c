/* test_lua_host.c -- DISH's Lua baseline (bench/orbit/dish_lua_host.c) is
 * a faithful one: each of the ten procedures of data/orbit/procedures,
 * in Lua and in DISH, on fresh simulated satellites with the same
 * settings (five scenarios: defaults, pipeline failures and a low
 * battery, eclipse with a cold GNSS, a pass over the Alps, nodes not
 * answering), leaves the same telemetry (kind, time, code, value) and
 * the same awake intervals; so do a procedure on the clock (a polled
 * wait, a sleep until) and one on a parameter it sets. A Lua error names
 * the file and line; the Lua token count of bench_dish.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dish_vm.h"
#include "dish_vs_lua.h"
#include "lua_tokens.h"

static dvl_scenario sc[DVL_NSCENARIOS];

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* Both sides of one pair, in every scenario: they agree. */
static void agree(const char *dish, const char *lua, const char *name, int want_tm) {
    static uint8_t img[DISH_MAX_IMAGE];
    static dvl_outcome od, ol;
    char err[512], why[512];
    int len = dvl_compile(dish, img, NULL, err, sizeof err);
    if (len < 0)
        print_message("%s\n", err);
    assert_true(len > 0);
    for (int s = 0; s < DVL_NSCENARIOS; s++) {
        assert_int_equal(dvl_run_dish(img, len, &sc[s], &od, NULL), 0);
        if (dvl_run_lua(lua, name, &sc[s], &ol, NULL))
            print_message("%s\n", ol.err);
        assert_true(ol.ended != 0 || ol.err[0] == 0);
        if (ol.ended < 0 && !sc[s].down_nodes) /* only a node that does not answer stops one */
            print_message("%s: %s\n", sc[s].name, ol.err);
        assert_false(ol.ended < 0 && !sc[s].down_nodes);
        if (dvl_compare(&od, &ol, why, sizeof why))
            print_message("%s, %s: %s\n", name, sc[s].name, why);
        assert_int_equal(dvl_compare(&od, &ol, why, sizeof why), 0);
        assert_int_equal(od.ended, ol.ended);
        if (want_tm && s == 0) { /* the defaults: it reported something */
            int n = 0;
            for (int k = 0; k < ol.ntlm && k < DVL_TLM; k++)
                n += ol.tlm[k].kind == DISH_TLM_USER;
            assert_true(n > 0);
        }
    }
}

static void ten_procedures_agree(void **state) {
    (void)state;
    for (int k = 0; k < DVL_NPROCS; k++) {
        char dish[512], lua[512];
        snprintf(dish, sizeof dish, "%s/%s.dish", DISH_PROC_DIR, dvl_procs[k]);
        snprintf(lua, sizeof lua, "%s/%s.lua", DISH_PROC_DIR, dvl_procs[k]);
        agree(dish, lua, dvl_procs[k], 0);
    }
}

static void clock_and_params_agree(void **state) {
    (void)state;
    write_file("clock.dish", "proc clock() {\n"
                             "  wait hasfix within 100\n"
                             "  let t = now + 5\n"
                             "  wait now >= t within 100\n"
                             "  tm(1, now - t)\n"
                             "  sleep until t + 10\n"
                             "  tm(2, now - t)\n"
                             "  sleep 3\n"
                             "  set(9, 9, 7)\n"
                             "  wait param(9, 9) == 7 within 10\n"
                             "  tm(3, param(9, 9))\n"
                             "  wait param(9, 9) == 8 within 4 else { tm(4, now - t) }\n"
                             "  return 1\n"
                             "}\n");
    write_file("clock.lua", "function clock()\n"
                            "  wait_until(has_fix, 100)\n"
                            "  local t = now() + 5\n"
                            "  wait_until(function() return now() >= t end, 100)\n"
                            "  tm(1, now() - t)\n"
                            "  sleep_until(t + 10)\n"
                            "  tm(2, now() - t)\n"
                            "  sleep(3)\n"
                            "  set_param(9, 9, 7)\n"
                            "  wait_until(function() return param(9, 9) == 7 end, 10)\n"
                            "  tm(3, param(9, 9))\n"
                            "  if not wait_until(function() return param(9, 9) == 8 end, 4) then\n"
                            "    tm(4, now() - t)\n"
                            "  end\n"
                            "  return 1\n"
                            "end\n");
    agree("clock.dish", "clock.lua", "clock", 1);
}

static void errors_name_file_and_line(void **state) {
    (void)state;
    static dish_sim sim;
    static dish_lua h;
    write_file("bad.lua", "function bad()\n  tm(1, 1)\n  local x = nil\n  return x + 1\nend\n");
    dish_sim_init(&sim);
    assert_int_equal(dish_lua_open(&h, &sim.pl, "bad.lua"), 0);
    assert_int_equal(dish_lua_start(&h, "bad", NULL, 0), 0);
    assert_int_equal(dish_lua_run(&h, 1000), 0);
    assert_int_equal(h.ended, -1);
    assert_non_null(strstr(h.err, "bad.lua:4:"));
    const dish_tlm *f = dish_sim_find(&sim, DISH_TLM_FAULT, -1);
    assert_non_null(f);
    assert_int_equal(f->value, 4);
    assert_int_equal(dish_lua_start(&h, "nothing", NULL, 0), -1);
    dish_lua_close(&h);

    write_file("syntax.lua", "function s()\n  if then\nend\n");
    assert_int_equal(dish_lua_open(&h, &sim.pl, "syntax.lua"), -1);
    assert_non_null(strstr(h.err, "syntax.lua:2:"));
    dish_lua_close(&h);

    /* a blocking call inside a wait's condition is refused, with its line */
    write_file("nested.lua", "function n()\n  wait_until(function()\n    sleep(1)\n"
                             "    return true\n  end, 5)\nend\n");
    assert_int_equal(dish_lua_open(&h, &sim.pl, "nested.lua"), 0);
    assert_int_equal(dish_lua_start(&h, "n", NULL, 0), 0);
    dish_lua_run(&h, sim.local_ms + 10000);
    assert_non_null(strstr(h.err, "nested.lua:3: sleep() inside a wait's condition"));
    dish_lua_close(&h);
}

/* Memory: the run is measured from a collected state; DISH's figure is
 * what it says it is. */
static void memory_is_counted(void **state) {
    (void)state;
    static uint8_t img[DISH_MAX_IMAGE];
    static dvl_outcome o;
    char dish[512], lua[512], err[256];
    dvl_dish_mem dm;
    dish_lua_mem lm;
    snprintf(dish, sizeof dish, "%s/multi_target.dish", DISH_PROC_DIR);
    snprintf(lua, sizeof lua, "%s/multi_target.lua", DISH_PROC_DIR);
    int len = dvl_compile(dish, img, NULL, err, sizeof err);
    assert_true(len > 0);
    assert_int_equal(dvl_run_dish(img, len, &sc[0], &o, &dm), 0);
    /* the VM reserved exactly the verifier's need, which the run did not pass */
    assert_true(dm.need_words > 0 && dm.need_words <= DISH_ARENA_WORDS);
    assert_int_equal(dm.arena, 4 * (size_t)dm.need_words);
    assert_int_equal(o.ended, 1);
    assert_int_equal(dm.code, (size_t)len - DISH_HDR - 2 * DISH_PROC_REC); /* two procedures */
    assert_int_equal(dm.slots, 2 * sizeof(dish_slot));
    assert_int_equal(dm.total, dm.run + dm.arena + dm.code + dm.slots + dm.vm);
    assert_int_equal(dvl_run_lua(lua, "multi_target", &sc[0], &o, &lm), 0);
    assert_true(lm.floor > 0 && lm.peak >= lm.floor && lm.allocs > 0);
}

static int count(const char *src) {
    char err[128];
    return lua_tokens("t.lua", src, strlen(src), err, sizeof err);
}

static void lua_tokens_counted(void **state) {
    (void)state;
    char err[128];
    assert_int_equal(count(""), 0);
    assert_int_equal(count("local x = 1 -- one\n"), 4);
    assert_int_equal(count("a..b ... == ~= <= >= // :: << >> ~ #t"), 15);
    assert_int_equal(count("x = [==[ a ]] ]==] .. 'q\\'s' .. \"\\\"\""), 7);
    assert_int_equal(count("--[[ long\ncomment ]] y --[=[ ]] ]=] z"), 2);
    assert_int_equal(count("n = 0x1p-4 + 3e+10 - .5 * 0xFF // 1.5E3"), 11);
    assert_int_equal(count("#!/usr/bin/lua\nprint(1)"), 4);
    assert_int_equal(count("f{a=1;b=2}[1]:m()"), 17);
    assert_int_equal(lua_tokens("t.lua", "x = 1\ny = 'open\n", 16, err, sizeof err), -1);
    assert_string_equal(err, "t.lua:2: unfinished string");
    assert_int_equal(lua_tokens("t.lua", "a\n--[[ no end", 13, err, sizeof err), -1);
    assert_string_equal(err, "t.lua:2: unfinished long comment");
    assert_int_equal(lua_tokens("t.lua", "a $ b", 5, err, sizeof err), -1);
}

int main(void) {
    dvl_scenarios(sc);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ten_procedures_agree),
        cmocka_unit_test(clock_and_params_agree),
        cmocka_unit_test(errors_name_file_and_line),
        cmocka_unit_test(memory_is_counted),
        cmocka_unit_test(lua_tokens_counted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
