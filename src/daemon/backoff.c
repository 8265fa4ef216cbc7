/* backoff.c -- a dying supervisor's restarts (backoff.h). */
#include "backoff.h"

#include <math.h>

int backoff_restarts_since(json_t *attempts, double since) {
    size_t i;
    json_t *att;
    int n = 0;
    json_array_foreach(attempts, i, att) {
        json_int_t number = json_integer_value(json_object_get(att, "n"));
        double started = json_number_value(json_object_get(att, "started"));
        n += number > 1 && started >= since;
    }
    return n;
}

double backoff_delay_s(int recent) {
    return recent >= BACKOFF_MAX_RESTARTS ? -1 : ldexp(1.0, recent);
}
