#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/url.h"

/* One write(2) per line, so lines from many workers never interleave. */
__attribute__((format(printf, 4, 0))) static void emit(const char *level, int err, const char *key,
		 const char *fmt, va_list ap)
{
	char line[2048], shown[2048], msg[8192], key_shown[2048] = "";
	char msg_shown[8192];
	size_t n;
	int saved = errno;
	int k;

	struct timespec now;
	struct tm tm;
	char when[32] = "";

	clock_gettime(CLOCK_REALTIME, &now);
	if (gmtime_r(&now.tv_sec, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	/* masked before the line cuts it (a cut password no longer looks
	 * like one); the whole line is masked again below, for the key */
	url_redact(msg, msg_shown, sizeof(msg_shown));
	memcpy(msg, msg_shown, strlen(msg_shown) + 1);
	/* a message that starts with its key (a fetch's reason starts with
	 * the URL) does not say it twice; both are compared masked */
	if (key)
		url_redact(key, key_shown, sizeof(key_shown));
	if (key && !strncmp(msg, key_shown, strlen(key_shown)) &&
	    msg[strlen(key_shown)] == ':')
		key = NULL;
	k = snprintf(line, sizeof(line), "%s.%03ldZ larder[%ld]: %s%s%s%s%s",
		     when, now.tv_nsec / 1000000, (long)getpid(),
		     level ? level : "", level ? ": " : "",
		     key ? key_shown : "", key ? ": " : "", msg);
	n = k < 0 ? 0 : (size_t)k;
	if (err && n < sizeof(line)) {
		k = snprintf(line + n, sizeof(line) - n, ": %s (%d)",
			     strerror(err), err);
		n += k < 0 ? 0 : (size_t)k;
	}
	/* and the line as a whole, strerror's part too */
	if (n > sizeof(line) - 1)
		n = sizeof(line) - 1;
	line[n] = '\0';
	url_redact(line, shown, sizeof(shown));
	memcpy(line, shown, strlen(shown) + 1);
	n = strlen(line);
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

int log_open(const char *path)
{
	int fd, err = 0;

	if (!path || !*path)
		return 0;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (fd < 0) {
		err = errno;
		log_error(err, path, "opening the log file");
		return err;
	}
	/* dup2 over standard error: the lines of anything else writing
	 * there (libcurl, sanitizers, a child) land in the file too */
	if (fd != STDERR_FILENO && dup2(fd, STDERR_FILENO) < 0) {
		err = errno;
		log_error(err, path, "dup2 of the log file");
	}
	if (fd != STDERR_FILENO)
		close(fd);
	return err;
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
