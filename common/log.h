/* log: one line per event on stderr, which every web server routes to its
 * error log. Errors always carry the path or key they are about and, when
 * err is non-zero, strerror(err) with the number. */
#ifndef LARDER_LOG_H
#define LARDER_LOG_H

#include <stddef.h>

/* Logs "larder[pid]: error: KEY: message: strerror (err)". err 0 leaves
 * the errno part out. errno is preserved. */
void log_error(int err, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Same shape, tagged "warning". */
void log_warn(int err, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* An informational line (request logs, start-up): "larder[pid]: message". */
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Not a log line: formats the one-line reason a parser hands back to its
 * caller into err (nothing when err is NULL or errlen 0). */
void log_reason(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
