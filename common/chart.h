/* chart: the status page's pictures as inline SVG, and numbers put the way
 * people read them. I/O-free: bytes in, markup out, no script. */
#ifndef LARDER_CHART_H
#define LARDER_CHART_H

#include <stddef.h>

#include "common/buf.h"

struct chart_bar {
	double value;      /* < 0: no data (nothing drawn) */
	const char *label; /* under the bar; NULL or "" for none */
	const char *tip;   /* hover text (an SVG <title>); NULL: none */
};

enum chart_unit {
	CHART_PERCENT, /* values 0..100, axis to 100 % */
	CHART_BYTES,   /* axis to the largest value, in B/KiB/... */
};

/* Appends to out an SVG bar chart of n bars (title as its accessible
 * name), each bar a <rect class="bar">, with a y axis at 0, half and the
 * top. Text is HTML-escaped. Returns 0 or an errno from buf. */
int chart_bars(struct buf *out, const char *title, const struct chart_bar *bars,
               size_t n, enum chart_unit unit);

/* Appends an SVG bar showing used against limit (limit <= 0: no limit,
 * the bar shows used alone), with its numbers in words. Returns 0 or an
 * errno from buf. */
int chart_gauge(struct buf *out, double used, double limit);

/* Writes bytes as people read them ("0 B", "512 B", "1.5 KiB", "3.0
 * GiB") into out (len bytes, at least 16). */
void chart_bytes(char *out, size_t len, double bytes);

#endif
