/* ready.c -- aegisd's sd_notify messages (ready.h), through libsystemd:
 * the protocol is a datagram to $NOTIFY_SOCKET, which libsystemd sends
 * with the credentials systemd checks, and is a no-op without it. */
#include "ready.h"

#include "dlog.h"

#include <string.h>
#include <systemd/sd-daemon.h>

void d_ready_notify(const char *status) {
    int rc = sd_notifyf(0, "READY=1\nSTATUS=%s", status);
    if (rc < 0) d_warn("sd_notify READY=1: %s", strerror(-rc));
}

void d_ready_stopping(const char *why) {
    int rc = sd_notifyf(0, "STOPPING=1\nSTATUS=stopping: %s", why);
    if (rc < 0) d_warn("sd_notify STOPPING=1: %s", strerror(-rc));
}
