/* t.h: the smallest test harness that works. Each test file defines
 * tests with T(name) { ... }, lists them in a main() through t_run(), and
 * exits non-zero when any check failed. Output is TAP-like:
 *   ok 3 - normalize_runs
 *   not ok 4 - accept_q  (test_accept.c:52: got 1, want 2)
 */
#ifndef LARDER_T_H
#define LARDER_T_H

#include <stdio.h>
#include <string.h>

static int t_failed;     /* checks failed in the current test */
static int t_total_fail; /* tests failed overall */
static int t_count;

#define CHECK(cond)                                                          \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "  %s:%d: check failed: %s\n",       \
				__FILE__, __LINE__, #cond);                  \
			t_failed++;                                          \
		}                                                            \
	} while (0)

#define CHECK_INT(got, want)                                                 \
	do {                                                                 \
		long long g_ = (long long)(got), w_ = (long long)(want);     \
		if (g_ != w_) {                                              \
			fprintf(stderr, "  %s:%d: %s: got %lld, want %lld\n", \
				__FILE__, __LINE__, #got, g_, w_);           \
			t_failed++;                                          \
		}                                                            \
	} while (0)

#define CHECK_STR(got, want)                                                 \
	do {                                                                 \
		const char *g_ = (got), *w_ = (want);                        \
		if (!g_ || !w_ || strcmp(g_, w_) != 0) {                     \
			fprintf(stderr,                                      \
				"  %s:%d: %s: got \"%s\", want \"%s\"\n",    \
				__FILE__, __LINE__, #got, g_ ? g_ : "(null)", \
				w_ ? w_ : "(null)");                         \
			t_failed++;                                          \
		}                                                            \
	} while (0)

#define CHECK_CONTAINS(hay, needle)                                          \
	do {                                                                 \
		const char *h_ = (hay), *n_ = (needle);                      \
		if (!h_ || !strstr(h_, n_)) {                                \
			fprintf(stderr,                                      \
				"  %s:%d: %s does not contain \"%s\"\n",     \
				__FILE__, __LINE__, #hay, n_);               \
			t_failed++;                                          \
		}                                                            \
	} while (0)

#define T(name) static void name(void)

static inline void t_run(const char *name, void (*fn)(void))
{
	t_failed = 0;
	fn();
	t_count++;
	if (t_failed) {
		t_total_fail++;
		printf("not ok %d - %s\n", t_count, name);
	} else {
		printf("ok %d - %s\n", t_count, name);
	}
}

#define RUN(fn) t_run(#fn, fn)

static inline int t_done(void)
{
	printf("1..%d\n", t_count);
	return t_total_fail ? 1 : 0;
}

#endif
