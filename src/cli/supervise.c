/* supervise.c -- a command run by aegisd as a job of kind pipeline
 * (supervise.h): a submit whose job carries "pipeline" (proto.h).
 */
#include "supervise.h"

#include "cli.h"
#include "client.h"
#include "submit.h"

json_int_t supervise(const char *socket, const char *name, json_t *cmd,
                     int *rc) {
    json_t *jobs = json_pack("[{s:o, s:s}]", "cmd", cmd, "pipeline", name);
    json_t *req = submit_request(jobs);
    *rc = CLI_USAGE;
    json_t *ans = req ? client_call("pipeline", socket, req, rc) : NULL;
    json_int_t id = json_integer_value(
        json_array_get(json_object_get(ans, "ids"), 0));
    json_decref(ans);
    return ans ? id : -1;
}
