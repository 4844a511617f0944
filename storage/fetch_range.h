/* fetch_range: a few bytes of an upstream file, by a single-range GET on
 * the process's kept connections (storage/fetch.h): what reading a wheel's
 * central directory and METADATA takes without its download, and what a
 * client's Range on a file the store lacks is relayed as. An upstream that
 * ignores Range (answers 200 with the whole file) is told apart, so that
 * the caller can remember it and fetch the whole file once instead.
 */
#ifndef LARDER_FETCH_RANGE_H
#define LARDER_FETCH_RANGE_H

#include <stddef.h>
#include <stdint.h>

#include "storage/fetch.h"

/* GETs the len bytes at off of url, or with tail set the last len bytes
 * (all of the file when it is shorter), into buf. Returns 0 with *got the
 * bytes in buf and *total the file's size (Content-Range, or the length
 * of a 200 that was the whole file and fit); EOPNOTSUPP when the upstream
 * answered 200 with more than len bytes (it ignores Range; the transfer is
 * cut at once); ERANGE for a 416 (nothing there); or an errno as
 * fetch_file() has them (ENODATA, EACCES, EPROTO, EREMOTEIO, ETIMEDOUT,
 * EPERM, EIO) with a one-line reason in err. */
int fetch_range(const struct fetch_opts *o, const char *url, uint64_t off,
		int tail, size_t len, uint8_t *buf, size_t *got,
		long long *total, char *err, size_t errlen);

#endif
