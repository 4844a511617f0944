#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

/* One write(2) per line, so lines from many workers never interleave. */
__attribute__((format(printf, 4, 0))) static void emit(const char *level, int err, const char *key,
		 const char *fmt, va_list ap)
{
	char line[2048];
	size_t n;
	int saved = errno;
	int k;

	k = snprintf(line, sizeof(line), "larder[%ld]: %s%s%s%s",
		     (long)getpid(), level ? level : "", level ? ": " : "",
		     key ? key : "", key ? ": " : "");
	n = k < 0 ? 0 : (size_t)k;
	if (n < sizeof(line)) {
		k = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
		n += k < 0 ? 0 : (size_t)k;
	}
	if (err && n < sizeof(line)) {
		k = snprintf(line + n, sizeof(line) - n, ": %s (%d)",
			     strerror(err), err);
		n += k < 0 ? 0 : (size_t)k;
	}
	if (n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	for (size_t i = 0; i < n; i++)
		if (line[i] == '\n' || line[i] == '\r')
			line[i] = ' ';
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, n) < 0) {
		/* nowhere left to report it */
	}
	errno = saved;
}

void log_error(int err, const char *key, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit("error", err, key, fmt, ap);
	va_end(ap);
}

void log_warn(int err, const char *key, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit("warning", err, key, fmt, ap);
	va_end(ap);
}

void log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(NULL, 0, NULL, fmt, ap);
	va_end(ap);
}

void log_reason(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}
