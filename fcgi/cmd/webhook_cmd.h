/* webhook_cmd: `larder webhook deliver` (what is due, once: for CGI
 * setups, from cron or a systemd timer) and `larder webhook test NAME` (a
 * ping, at once). The delivery itself is storage/webhook.h. */
#ifndef LARDER_WEBHOOK_CMD_H
#define LARDER_WEBHOOK_CMD_H

/* Runs `larder webhook ...` with argv[0] "webhook". Returns the exit
 * status: 0 done (deliver: every try worked, or another deliverer was at
 * work; test: the receiver answered 2xx), 1 a delivery failed, 2 usage
 * or I/O error. */
int webhook_cmd(int argc, char **argv);

#endif
