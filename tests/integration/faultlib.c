/* faultlib: an LD_PRELOAD library for the tests that make system calls
 * fail in a larder process, as a machine out of processes or memory would:
 *   FAULT_FORK=1        fork() fails with EAGAIN
 *   FAULT_MALLOC_OVER=N malloc() of N bytes or more returns NULL
 * Built by the tests with cc (tests/integration/cgi.py; with -DNO_MALLOC
 * for sanitizer builds, whose malloc is their own); never part of larder. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
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
