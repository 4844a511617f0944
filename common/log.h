/* log: one line per event on stderr, which every web server routes to its
 * error log, or on the file log_open() names. Errors always carry the path
 * or key they are about and, when err is non-zero, strerror(err) with the
 * number. Every line starts with its time, ISO 8601 in UTC to the
 * millisecond, and "larder[pid]:":
 *   2026-12-02T05:40:01.123Z larder[4242]: warning: KEY: message
 */
#ifndef LARDER_LOG_H
#define LARDER_LOG_H

#include <stddef.h>

/* Logs "TIME larder[pid]: error: KEY: message: strerror (err)". err 0 leaves
 * the errno part out. errno is preserved. */
void log_error(int err, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Same shape, tagged "warning". */
void log_warn(int err, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* An informational line (request logs, start-up): "TIME larder[pid]:
 * message". */
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Sends the log lines of this process to path from now on (appended to,
 * created 0640 when missing), in place of standard error, which becomes
 * that file too; "" or NULL leaves standard error as it is. Called again
 * with the same path, it reopens the file (after logrotate moved it).
 * Returns 0 or an errno (logged where the lines went so far). */
int log_open(const char *path);

/* Not a log line: formats the one-line reason a parser hands back to its
 * caller into err (nothing when err is NULL or errlen 0). */
void log_reason(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
