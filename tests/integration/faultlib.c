/* faultlib: an LD_PRELOAD library for the tests that make system calls
 * fail in a larder process, as a machine out of processes or memory would:
 *   FAULT_FORK=1        fork() fails with EAGAIN
 *   FAULT_MALLOC_OVER=N malloc() of N bytes or more returns NULL
 *   FAULT_SQL=TEXT      sqlite3_step() of a statement whose SQL holds TEXT
 *                       fails with SQLITE_IOERR, as a failing disk would
 * Built by the tests with cc (tests/integration/cgi.py; with -DNO_MALLOC
 * for sanitizer builds, whose malloc is their own); never part of larder. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef NO_MALLOC
extern void *__libc_malloc(size_t n);

static size_t malloc_over(void)
{
	static size_t over = (size_t)-2;

	if (over == (size_t)-2) {
		const char *v = getenv("FAULT_MALLOC_OVER");

		over = v && *v ? strtoull(v, NULL, 10) : (size_t)-1;
	}
	return over;
}

void *malloc(size_t n)
{
	if (n >= malloc_over()) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_malloc(n);
}
#endif

pid_t fork(void)
{
	static pid_t (*real)(void);

	if (getenv("FAULT_FORK")) {
		errno = EAGAIN;
		return -1;
	}
	if (!real)
		real = (pid_t(*)(void))dlsym(RTLD_NEXT, "fork");
	return real();
}

/* (SQLite's own prototypes: its headers need not be installed) */
typedef struct sqlite3_stmt sqlite3_stmt;
#define FAULT_SQLITE_IOERR 10

int sqlite3_step(sqlite3_stmt *st)
{
	static int (*real)(sqlite3_stmt *);
	static const char *(*sql)(sqlite3_stmt *);
	const char *match = getenv("FAULT_SQL");

	if (!real) {
		real = (int (*)(sqlite3_stmt *))dlsym(RTLD_NEXT, "sqlite3_step");
		sql = (const char *(*)(sqlite3_stmt *))dlsym(RTLD_NEXT,
							     "sqlite3_sql");
	}
	if (match && *match && sql) {
		const char *text = sql(st);

		if (text && strstr(text, match))
			return FAULT_SQLITE_IOERR;
	}
	return real(st);
}
