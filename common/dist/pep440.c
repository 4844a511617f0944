#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dist/distname.h"
#include "common/dist/pep440.h"

/* Reads a run of digits at *s into *out, moving *s past it. */
static int number(const char **s, unsigned long long *out)
{
	const char *p = *s;
	unsigned long long n = 0;

	if (*p < '0' || *p > '9')
		return EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (n > (~0ULL - d) / 10)
			return EINVAL;
		n = n * 10 + d;
	}
	*s = p;
	*out = n;
	return 0;
}

int pep440_parse(const char *v, struct pep440 *out)
{
	char canon[DISTNAME_VERSION_MAX];
	const char *s = canon, *bang;
	unsigned long long n;

	memset(out, 0, sizeof(*out));
	if (!v || distname_version_canon(v, canon, sizeof(canon)))
		return EINVAL;
	/* the normal form is regular: each part in its one spelling */
	bang = strchr(canon, '!');
	if (bang) {
		if (number(&s, &out->epoch) || s != bang)
			return EINVAL;
		s++;
	}
	for (;;) {
		if (out->nrelease == PEP440_MAX_RELEASE || number(&s, &n))
			return EINVAL;
		out->release[out->nrelease++] = n;
		if (*s != '.' || s[1] < '0' || s[1] > '9')
			break;
		s++;
	}
	if (*s == 'a' || *s == 'b' || (s[0] == 'r' && s[1] == 'c')) {
		out->pre = *s == 'a' ? PEP440_PRE_A :
			   *s == 'b' ? PEP440_PRE_B : PEP440_PRE_RC;
		s += out->pre == PEP440_PRE_RC ? 2 : 1;
		if (number(&s, &out->pre_n))
			return EINVAL;
	}
	if (strncmp(s, ".post", 5) == 0) {
		s += 5;
		out->has_post = 1;
		if (number(&s, &out->post))
			return EINVAL;
	}
	if (strncmp(s, ".dev", 4) == 0) {
		s += 4;
		out->has_dev = 1;
		if (number(&s, &out->dev))
			return EINVAL;
	}
	if (*s == '+') {
		if (strlen(s + 1) >= sizeof(out->local))
			return EINVAL;
		snprintf(out->local, sizeof(out->local), "%s", s + 1);
		s += strlen(s);
	}
	return *s ? EINVAL : 0;
}

static int cmp_ull(unsigned long long a, unsigned long long b)
{
	return a < b ? -1 : a > b;
}

/* Whether the local segment [s, s+n) is all digits. */
static int numeric(const char *s, size_t n)
{
	return n > 0 && strspn(s, "0123456789") >= n;
}

/* Compares two local parts segment by segment: numbers as numbers and
 * above words, words as strings, a prefix first. */
static int cmp_local(const char *a, const char *b)
{
	while (*a && *b) {
		size_t na = strcspn(a, "."), nb = strcspn(b, ".");
		int na_num = numeric(a, na), nb_num = numeric(b, nb), c;

		if (na_num != nb_num)
			return na_num ? 1 : -1;
		if (na_num) {
			/* no leading zeros in the normal form... mostly:
			 * compare by length, then digits */
			while (na > 1 && *a == '0')
				a++, na--;
			while (nb > 1 && *b == '0')
				b++, nb--;
			c = na != nb ? (na < nb ? -1 : 1) : strncmp(a, b, na);
		} else {
			c = strncmp(a, b, na < nb ? na : nb);
			if (!c && na != nb)
				c = na < nb ? -1 : 1;
		}
		if (c)
			return c;
		a += na + (a[na] == '.');
		b += nb + (b[nb] == '.');
	}
	return *a ? 1 : *b ? -1 : 0;
}

/* packaging's key for the pre part: a dev release of a final (1.0.dev1)
 * sorts before every pre-release, no pre part after all of them. */
static int pre_rank(const struct pep440 *v, unsigned long long *n)
{
	*n = v->pre_n;
	if (v->pre == PEP440_PRE_NONE && !v->has_post && v->has_dev)
		return -1;
	if (v->pre == PEP440_PRE_NONE)
		return 4;
	return (int)v->pre;
}

int pep440_cmp(const struct pep440 *a, const struct pep440 *b)
{
	unsigned long long an, bn;
	size_t n = a->nrelease > b->nrelease ? a->nrelease : b->nrelease;
	int c, ra, rb;

	c = cmp_ull(a->epoch, b->epoch);
	for (size_t i = 0; !c && i < n; i++)
		c = cmp_ull(i < a->nrelease ? a->release[i] : 0,
			    i < b->nrelease ? b->release[i] : 0);
	if (c)
		return c;
	ra = pre_rank(a, &an);
	rb = pre_rank(b, &bn);
	if (ra != rb)
		return ra < rb ? -1 : 1;
	if (ra >= PEP440_PRE_A && ra <= PEP440_PRE_RC && (c = cmp_ull(an, bn)))
		return c;
	/* no post part sorts before any */
	if (a->has_post != b->has_post)
		return a->has_post ? 1 : -1;
	if (a->has_post && (c = cmp_ull(a->post, b->post)))
		return c;
	/* no dev part sorts after any */
	if (a->has_dev != b->has_dev)
		return a->has_dev ? -1 : 1;
	if (a->has_dev && (c = cmp_ull(a->dev, b->dev)))
		return c;
	/* no local part sorts before any */
	if (!*a->local != !*b->local)
		return *a->local ? 1 : -1;
	return cmp_local(a->local, b->local);
}

int pep440_is_prerelease(const struct pep440 *v)
{
	return v->pre != PEP440_PRE_NONE || v->has_dev;
}
