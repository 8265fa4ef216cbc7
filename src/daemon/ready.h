/* ready.h -- telling systemd (Type=notify) what aegisd is doing: "ready"
 * once the socket listens, so that `systemctl start aegisd; aegis gpus`
 * never finds the socket missing, and "stopping" when it stops. Outside
 * systemd (no NOTIFY_SOCKET) both do nothing. */
#ifndef AEGIS_READY_H
#define AEGIS_READY_H

/* READY=1, with status as the unit's status line (systemctl status). */
void d_ready_notify(const char *status);
/* STOPPING=1, with why as the status line. */
void d_ready_stopping(const char *why);

#endif
