#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dist/wheeltag.h"
#include "common/names.h"

/* Platforms one platform tag implies, best first. */
#define MAX_PLATS 160
#define PLAT_LEN  48

struct plats {
	char v[MAX_PLATS][PLAT_LEN];
	size_t n;
};

static void plat_add(struct plats *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void plat_add(struct plats *p, const char *fmt, ...)
{
	va_list ap;

	if (p->n >= MAX_PLATS)
		return;
	va_start(ap, fmt);
	vsnprintf(p->v[p->n++], PLAT_LEN, fmt, ap);
	va_end(ap);
}

/* Reads "A_B_REST" at s: two numbers and the rest. Returns 0 or -1. */
static int two_numbers(const char *s, int *a, int *b, const char **rest)
{
	char *end;
	long x, y;

	x = strtol(s, &end, 10);
	if (end == s || *end != '_' || x < 0 || x > 99)
		return -1;
	s = end + 1;
	y = strtol(s, &end, 10);
	if (end == s || *end != '_' || y < 0 || y > 99 || !end[1])
		return -1;
	*a = (int)x;
	*b = (int)y;
	*rest = end + 1;
	return 0;
}

static int is_x86(const char *arch)
{
	return strcmp(arch, "x86_64") == 0 || strcmp(arch, "i686") == 0;
}

static void manylinux(struct plats *p, int minor, const char *arch)
{
	int low = is_x86(arch) ? 5 : 17;

	for (int m = minor; m >= low; m--) {
		plat_add(p, "manylinux_2_%d_%s", m, arch);
		if (m == 17)
			plat_add(p, "manylinux2014_%s", arch);
		if (m == 12 && is_x86(arch))
			plat_add(p, "manylinux2010_%s", arch);
		if (m == 5 && is_x86(arch))
			plat_add(p, "manylinux1_%s", arch);
	}
	plat_add(p, "linux_%s", arch);
}

/* packaging's _mac_binary_formats */
static void mac_formats(struct plats *p, int major, int minor, const char *arch)
{
	static const char *const x86[] = {"x86_64", "intel",      "fat64",
	                                  "fat32",  "universal2", "universal"};
	if (strcmp(arch, "x86_64") == 0) {
		if (major == 10 && minor < 4)
			return;
		for (size_t i = 0; i < sizeof(x86) / sizeof(x86[0]); i++)
			plat_add(p, "macosx_%d_%d_%s", major, minor, x86[i]);
	} else if (strcmp(arch, "arm64") == 0) {
		plat_add(p, "macosx_%d_%d_arm64", major, minor);
		plat_add(p, "macosx_%d_%d_universal2", major, minor);
	} else {
		plat_add(p, "macosx_%d_%d_%s", major, minor, arch);
	}
}

static void macosx(struct plats *p, int major, int minor, const char *arch)
{
	if (major == 10) {
		for (int m = minor; m >= 0; m--)
			mac_formats(p, 10, m, arch);
		return;
	}
	for (int v = major; v >= 11; v--)
		mac_formats(p, v, 0, arch);
	for (int m = 16; m >= 4; m--) {
		if (strcmp(arch, "x86_64") == 0)
			mac_formats(p, 10, m, arch);
		else
			plat_add(p, "macosx_10_%d_universal2", m);
	}
}

static int valid_tag_text(const char *s)
{
	if (!*s || strlen(s) >= PLAT_LEN - 16)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
		      *s == '_'))
			return 0;
	return 1;
}

static int platforms(const char *plat, struct plats *p)
{
	const char *arch;
	int a, b;

	p->n = 0;
	if (!valid_tag_text(plat))
		return EINVAL;
	if (strcmp(plat, "any") == 0)
		return 0;
	if (strncmp(plat, "manylinux_", 10) == 0) {
		if (two_numbers(plat + 10, &a, &b, &arch) || a != 2)
			return EINVAL;
		manylinux(p, b, arch);
	} else if (strncmp(plat, "manylinux2014_", 14) == 0) {
		manylinux(p, 17, plat + 14);
	} else if (strncmp(plat, "manylinux2010_", 14) == 0) {
		manylinux(p, 12, plat + 14);
	} else if (strncmp(plat, "manylinux1_", 11) == 0) {
		manylinux(p, 5, plat + 11);
	} else if (strncmp(plat, "musllinux_", 10) == 0) {
		if (two_numbers(plat + 10, &a, &b, &arch) || a != 1)
			return EINVAL;
		for (int m = b; m >= 0; m--)
			plat_add(p, "musllinux_1_%d_%s", m, arch);
		plat_add(p, "linux_%s", arch);
	} else if (strncmp(plat, "macosx_", 7) == 0) {
		if (two_numbers(plat + 7, &a, &b, &arch) || a < 10)
			return EINVAL;
		macosx(p, a, b, arch);
	} else {
		plat_add(p, "%s", plat);
	}
	return 0;
}

static int add(struct wheeltag_target *t, size_t cap, const char *py,
               const char *abi, const char *plat)
{
	int n;

	if (t->n >= cap)
		return ENOMEM;
	n = snprintf(t->tags[t->n], WHEELTAG_LEN, "%s-%s-%s", py, abi, plat);
	if (n < 0 || n >= WHEELTAG_LEN)
		return EINVAL; /* a platform too long for a tag */
	t->n++;
	return 0;
}

int wheeltag_target_init(struct wheeltag_target *t, const char *python,
                         const char *platform)
{
	struct plats *p = NULL;
	char cp[16], abi3[16], pys[102][16];
	size_t cap, npy = 0;
	int err, minor;
	char *end;

	memset(t, 0, sizeof(*t));
	if (!python || !platform || strncmp(python, "3.", 2) != 0)
		return EINVAL;
	minor = (int)strtol(python + 2, &end, 10);
	if (end == python + 2 || (*end && *end != '.') || minor < 0 ||
	    minor > 99)
		return EINVAL;
	p = malloc(sizeof(*p));
	if (!p)
		return ENOMEM;
	err = platforms(platform, p);
	if (err)
		goto fail;
	cap = p->n * (3 + 2 * (size_t)minor + 2) + (size_t)minor + 3;
	t->tags = calloc(cap, WHEELTAG_LEN);
	err = ENOMEM;
	if (!t->tags)
		goto fail;
	snprintf(t->python, sizeof(t->python), "3.%d", minor);
	snprintf(t->platform, sizeof(t->platform), "%s", platform);
	snprintf(cp, sizeof(cp), "cp3%d", minor);
	err = 0;
	for (size_t i = 0; i < p->n && !err; i++)
		err = add(t, cap, cp, cp, p->v[i]);
	for (size_t i = 0; i < p->n && !err && minor >= 2; i++)
		err = add(t, cap, cp, "abi3", p->v[i]);
	for (size_t i = 0; i < p->n && !err; i++)
		err = add(t, cap, cp, "none", p->v[i]);
	for (int m = minor - 1; m >= 2 && !err; m--) {
		snprintf(abi3, sizeof(abi3), "cp3%d", m);
		for (size_t i = 0; i < p->n && !err; i++)
			err = add(t, cap, abi3, "abi3", p->v[i]);
	}
	/* py3Y, py3, py3(Y-1) ... py30 on each platform, then on any */
	snprintf(pys[npy++], sizeof(pys[0]), "py3%d", minor);
	snprintf(pys[npy++], sizeof(pys[0]), "py3");
	for (int m = minor - 1; m >= 0; m--)
		snprintf(pys[npy++], sizeof(pys[0]), "py3%d", m);
	for (size_t k = 0; k < npy && !err; k++)
		for (size_t i = 0; i < p->n && !err; i++)
			err = add(t, cap, pys[k], "none", p->v[i]);
	if (!err)
		err = add(t, cap, cp, "none", "any");
	for (size_t k = 0; k < npy && !err; k++)
		err = add(t, cap, pys[k], "none", "any");
	if (err)
		goto fail;
	free(p);
	return 0;
fail:
	free(p);
	wheeltag_target_free(t);
	return err;
}

void wheeltag_target_free(struct wheeltag_target *t)
{
	free(t->tags);
	t->tags = NULL;
	t->n = 0;
}

static int copy(char *dst, size_t len, const char *s, size_t n)
{
	if (!dst)
		return 0;
	if (n >= len)
		return EINVAL;
	memcpy(dst, s, n);
	dst[n] = '\0';
	return 0;
}

int wheeltag_split(const char *filename, char *name, size_t namelen,
                   char *version, size_t versionlen, char *tags, size_t tagslen)
{
	const char *dash[6];
	size_t len, nd = 0;
	int err;

	if (!filename)
		return EINVAL;
	len = strlen(filename);
	if (len < 4 + 9 || strcmp(filename + len - 4, ".whl") != 0)
		return EINVAL;
	len -= 4;
	for (size_t i = 0; i < len; i++) {
		if (filename[i] != '-')
			continue;
		if (nd == 5)
			return EINVAL;
		dash[nd++] = filename + i;
	}
	if (nd != 4 && nd != 5)
		return EINVAL;
	for (size_t i = 0; i + 1 < nd; i++)
		if (dash[i + 1] == dash[i] + 1)
			return EINVAL;
	if (dash[0] == filename || dash[nd - 1] == filename + len - 1)
		return EINVAL;
	err = copy(name, namelen, filename, (size_t)(dash[0] - filename));
	if (!err)
		err = copy(version, versionlen, dash[0] + 1,
		           (size_t)(dash[1] - dash[0] - 1));
	if (!err)
		err = copy(tags, tagslen, dash[nd - 3] + 1,
		           (size_t)(filename + len - dash[nd - 3] - 1));
	return err;
}

/* The position of tag in t, or -1. */
static long find(const struct wheeltag_target *t, const char *tag)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->tags[i], tag) == 0)
			return (long)i;
	return -1;
}

/* Splits the dotted set at s (n bytes) into its members at out. */
static size_t members(const char *s, size_t n, const char *out[16],
                      size_t lens[16])
{
	size_t k = 0, start = 0;

	for (size_t i = 0; i <= n && k < 16; i++) {
		if (i < n && s[i] != '.')
			continue;
		out[k] = s + start;
		lens[k++] = i - start;
		start = i + 1;
	}
	return k;
}

long wheeltag_rank(const struct wheeltag_target *t, const char *filename)
{
	char tags[3 * WHEELTAG_LEN], tag[WHEELTAG_LEN];
	const char *py[16], *abi[16], *pl[16];
	size_t pyl[16], abil[16], pll[16], npy, nabi, npl;
	char *d1, *d2;
	long best = -1, r;

	if (wheeltag_split(filename, NULL, 0, NULL, 0, tags, sizeof(tags)))
		return -1;
	d1 = strchr(tags, '-');
	d2 = d1 ? strchr(d1 + 1, '-') : NULL;
	if (!d2)
		return -1;
	npy = members(tags, (size_t)(d1 - tags), py, pyl);
	nabi = members(d1 + 1, (size_t)(d2 - d1 - 1), abi, abil);
	npl = members(d2 + 1, strlen(d2 + 1), pl, pll);
	for (size_t i = 0; i < npy; i++)
		for (size_t j = 0; j < nabi; j++)
			for (size_t k = 0; k < npl; k++) {
				if (pyl[i] + abil[j] + pll[k] + 3 > sizeof(tag))
					continue;
				snprintf(tag, sizeof(tag), "%.*s-%.*s-%.*s",
				         (int)pyl[i], py[i], (int)abil[j],
				         abi[j], (int)pll[k], pl[k]);
				r = find(t, tag);
				if (r >= 0 && (best < 0 || r < best))
					best = r;
			}
	return best;
}

static const char *const sdist_ext[] = {".tar.gz", ".zip", ".tar.bz2", ".tgz",
                                        ".tar.xz"};

int wheeltag_sdist_version(const char *filename, const char *project,
                           char *version, size_t versionlen)
{
	char name[NAMES_MAX_PROJECT + 1], norm[NAMES_MAX_PROJECT + 1];
	size_t len, ext = 0;

	if (!filename || !project)
		return EINVAL;
	len = strlen(filename);
	for (size_t i = 0; i < sizeof(sdist_ext) / sizeof(sdist_ext[0]); i++) {
		size_t el = strlen(sdist_ext[i]);

		if (len > el && strcmp(filename + len - el, sdist_ext[i]) == 0)
			ext = el;
	}
	if (!ext)
		return EINVAL;
	len -= ext;
	for (size_t i = 1; i + 1 < len; i++) {
		if (filename[i] != '-' || i > NAMES_MAX_PROJECT)
			continue;
		memcpy(name, filename, i);
		name[i] = '\0';
		if (names_normalize(name, norm, sizeof(norm)) == 0 &&
		    strcmp(norm, project) == 0)
			return copy(version, versionlen, filename + i + 1,
			            len - i - 1);
	}
	return EINVAL;
}

/* Writes the comparable form of v to out: the release's numbers without
 * leading zeros or trailing zero segments, then the rest lowercased with
 * separators dropped. */
static void canon(const char *v, char *out, size_t len)
{
	size_t n = 0, keep = 0;
	char *end;

	if (*v == 'v' || *v == 'V')
		v++;
	while (*v >= '0' && *v <= '9' && n + 24 < len) {
		unsigned long long x = strtoull(v, &end, 10);

		n += (size_t)snprintf(out + n, len - n, "%s%llu", n ? "." : "",
		                      x);
		if (x)
			keep = n;
		v = end;
		if (*v != '.' || !(v[1] >= '0' && v[1] <= '9'))
			break;
		v++;
	}
	n = keep;
	for (; *v && n + 1 < len; v++) {
		if (*v == '.' || *v == '-' || *v == '_')
			continue;
		out[n++] =
		    (*v >= 'A' && *v <= 'Z') ? (char)(*v - 'A' + 'a') : *v;
	}
	out[n] = '\0';
}

int wheeltag_version_eq(const char *a, const char *b)
{
	char ca[128], cb[128];

	if (!a || !b)
		return 0;
	if (strlen(a) >= sizeof(ca) || strlen(b) >= sizeof(cb))
		return strcmp(a, b) == 0;
	canon(a, ca, sizeof(ca));
	canon(b, cb, sizeof(cb));
	return strcmp(ca, cb) == 0;
}
