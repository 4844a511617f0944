/* out: a page written straight through into a buf, its first error kept
 * and checked once at the end (the landing pages, /+search). */
#ifndef LARDER_ADMIN_OUT_H
#define LARDER_ADMIN_OUT_H

#include "common/buf.h"

struct out {
	struct buf b;
	int err; /* the first error of a write, 0 none: later ones do nothing */
};

/* Appends s. */
void out_add(struct out *o, const char *s);

/* Appends the formatted text. */
void out_addf(struct out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Appends s escaped for HTML ("" for NULL). */
void out_html(struct out *o, const char *s);

/* Appends s as a JSON string, or null for NULL. */
void out_jstr(struct out *o, const char *s);

#endif
