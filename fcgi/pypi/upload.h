/* upload: POST /{index}/, the legacy PyPI upload API (twine, pdm publish,
 * poetry publish, uv publish).
 *
 * The body is multipart/form-data: the fields :action=file_upload,
 * protocol_version=1, name, version, the digests (md5_digest,
 * sha256_digest, blake2_256_digest) and the metadata fields, and the file
 * as the part "content". It is parsed as it is read (common/http/multipart.h):
 * the file streams into a locked temp file while it is hashed, never
 * whole in memory, and past max_upload_size the upload is a 413 with
 * nothing stored. Then every digest sent must match, the file name, the
 * archive and its metadata must agree with name and version (fcgi/pypi/dist.h),
 * and the file and its metadata are published (fcgi/pypi/hosted.h). The token
 * is checked before the body is read (its project once the name is
 * known).
 */
#ifndef LARDER_UPLOAD_H
#define LARDER_UPLOAD_H

#include "common/http/route.h"
#include "fcgi/server/req.h"
#include "fcgi/server/worker.h"

/* Answers an upload to the index rt->index: 200 (also for a file that is
 * there already with the same bytes), 400 with the reason, 401/403 from
 * the token check, 405 when no hosted index is behind it, 409 for the same
 * name with other bytes on an index that is not volatile, 413. */
void upload_serve(struct worker *w, struct req *r, const struct route *rt);

#endif
