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

/* One clause's operator, at *s (blanks skipped), moving *s past it.
 * Returns its text, or NULL. */
static const char *spec_op(const char **s)
{
	/* "===" (arbitrary equality) is not taken: "==" then "=V" fails */
	static const char *const ops[] = {"==", "!=", "<=", ">=", "~=", "<",
					  ">"};

	while (**s == ' ' || **s == '\t')
		(*s)++;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (strncmp(*s, ops[i], strlen(ops[i])) == 0) {
			*s += strlen(ops[i]);
			return ops[i];
		}
	return NULL;
}

/* Whether v's release starts with prefix's (zeros padded), same epoch. */
static int prefix_match(const struct pep440 *v, const struct pep440 *p)
{
	if (v->epoch != p->epoch)
		return 0;
	for (size_t i = 0; i < p->nrelease; i++)
		if ((i < v->nrelease ? v->release[i] : 0) != p->release[i])
			return 0;
	return 1;
}

/* Whether a and b have the same epoch and release (zeros padded). */
static int same_release(const struct pep440 *a, const struct pep440 *b)
{
	size_t n = a->nrelease > b->nrelease ? a->nrelease : b->nrelease;

	if (a->epoch != b->epoch)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((i < a->nrelease ? a->release[i] : 0) !=
		    (i < b->nrelease ? b->release[i] : 0))
			return 0;
	return 1;
}

/* Whether v satisfies one clause: op, then text (len bytes). Returns 1,
 * 0, or -1 when the clause is none. */
static int clause(const char *op, const char *text, size_t len,
		  const struct pep440 *v)
{
	char ver[DISTNAME_VERSION_MAX];
	struct pep440 c, w = *v;
	int star = 0, cmp;

	while (len && (*text == ' ' || *text == '\t'))
		text++, len--;
	while (len && (text[len - 1] == ' ' || text[len - 1] == '\t'))
		len--;
	if (!len || len >= sizeof(ver))
		return -1;
	memcpy(ver, text, len);
	ver[len] = 0;
	if (len > 2 && !strcmp(ver + len - 2, ".*")) {
		if (strcmp(op, "==") && strcmp(op, "!="))
			return -1;
		star = 1;
		ver[len - 2] = 0;
	}
	if (pep440_parse(ver, &c))
		return -1;
	if (star) {
		if (c.pre || c.has_post || c.has_dev || *c.local)
			return -1;
		return prefix_match(v, &c) == !strcmp(op, "==");
	}
	if (!strcmp(op, "~=")) {
		struct pep440 pre = c;

		if (c.nrelease < 2 || *c.local)
			return -1;
		pre.nrelease--;
		pre.pre = PEP440_PRE_NONE;
		pre.has_post = pre.has_dev = 0;
		return pep440_cmp(v, &c) >= 0 && prefix_match(v, &pre);
	}
	/* a local part counts only when the clause gives one */
	if (!*c.local)
		w.local[0] = 0;
	else if (strcmp(op, "==") && strcmp(op, "!="))
		return -1;
	cmp = pep440_cmp(&w, &c);
	if (!strcmp(op, "=="))
		return cmp == 0;
	if (!strcmp(op, "!="))
		return cmp != 0;
	if (!strcmp(op, "<="))
		return cmp <= 0;
	if (!strcmp(op, ">="))
		return cmp >= 0;
	if (!strcmp(op, ">"))
		return cmp > 0;
	/* "<": not a pre-release of the very version named */
	if (cmp >= 0)
		return 0;
	return pep440_is_prerelease(&c) || !pep440_is_prerelease(v) ||
	       !same_release(v, &c);
}

/* Walks spec's clauses: each is matched against v (when v) or only
 * checked. Returns 1 when all hold, 0 when one does not, -1 when one is
 * no clause. */
static int spec_walk(const char *spec, const struct pep440 *v)
{
	struct pep440 any;
	const char *s = spec;
	int all = 1;

	memset(&any, 0, sizeof(any));
	any.nrelease = 1;
	while (*s == ' ' || *s == '\t')
		s++;
	if (!*s)
		return 1;
	for (;;) {
		const char *op = spec_op(&s), *end;
		int r;

		if (!op)
			return -1;
		end = strchr(s, ',');
		if (!end)
			end = s + strlen(s);
		r = clause(op, s, (size_t)(end - s), v ? v : &any);
		if (r < 0)
			return -1;
		if (!r)
			all = 0;
		if (!*end)
			return all;
		s = end + 1;
	}
}

int pep440_spec_check(const char *spec)
{
	return spec_walk(spec, NULL) < 0 ? EINVAL : 0;
}

int pep440_spec_match(const char *spec, const struct pep440 *v)
{
	return spec_walk(spec, v) == 1;
}
