/* libFuzzer target: the input is a whole zip file. Its end records, every
 * central directory entry, the overlap check, the METADATA lookup, local
 * header and inflate (with a small cap) never crash, and what they return
 * stays within the file. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/dist/zipdir.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

/* Locates and inflates e, as dist.c does. */
static void read_entry(const uint8_t *d, size_t n, const struct zipdir *z,
                       const struct zipdir_entry *e)
{
	char err[256];
	uint8_t *out = NULL;
	size_t outlen = 0, need = 0;
	uint64_t at;
	int rc;

	rc = zipdir_local(z, e, d + e->offset, n - (size_t)e->offset, &at,
	                  &need, err, sizeof(err));
	if (rc)
		return;
	if (at > n || n - at < e->csize || at + e->csize > z->cd_offset)
		abort();
	rc = zipdir_inflate(e, d + at, (size_t)e->csize, 1 << 16, &out, &outlen,
	                    err, sizeof(err));
	if (rc == 0 && (outlen != e->usize || out[outlen] != '\0'))
		abort();
	if (rc && out)
		abort();
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct zipdir z;
	struct zipdir_iter it;
	struct zipdir_entry e;
	const uint8_t *cd;
	char err[256];
	size_t need = 0, k = 0;
	int rc;

	rc = zipdir_open(&z, d, n, n, &need, err, sizeof(err));
	if (rc == EAGAIN)
		abort(); /* the whole file is always enough */
	if (rc)
		return 0;
	if (z.cd_offset + z.cd_size != z.end || z.end > n)
		abort();
	cd = zipdir_cd_in(&z, d, n);
	if (!cd)
		abort();
	zipdir_iter_init(&it, &z, cd);
	while (zipdir_next(&it, &e, err, sizeof(err)) == 0) {
		if (e.offset + e.csize > z.cd_offset ||
		    e.name < (const char *)cd ||
		    e.name + e.namelen > (const char *)cd + z.cd_size ||
		    memchr(e.name, '\0', e.namelen))
			abort();
		if (k++ < 4)
			read_entry(d, n, &z, &e);
	}
	if (zipdir_check(&z, cd, err, sizeof(err)) != 0)
		return 0;
	if (zipdir_find_metadata(&z, cd, NULL, NULL, &e, err, sizeof(err)) == 0)
		read_entry(d, n, &z, &e);
	if (zipdir_find_metadata(&z, cd, "corp-lib", "1.0", &e, err,
	                         sizeof(err)) == 0)
		read_entry(d, n, &z, &e);
	return 0;
}
