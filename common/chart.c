#include "config.h"

#include <errno.h>
#include <stdio.h>

#include "common/chart.h"

/* The drawing's size and the room left for the axis labels. */
#define W      600
#define H      180
#define LEFT   70
#define RIGHT  10
#define TOP    10
#define BOTTOM 24

void chart_bytes(char *out, size_t len, double bytes)
{
	static const char *const unit[] = {"B",   "KiB", "MiB",
	                                   "GiB", "TiB", "PiB"};
	int u = 0;

	while (bytes >= 1024 && u < 5) {
		bytes /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(out, len, "%.0f B", bytes);
	else
		snprintf(out, len, "%.1f %s", bytes, unit[u]);
}

static void axis_label(char *out, size_t len, double v, enum chart_unit unit)
{
	if (unit == CHART_PERCENT)
		snprintf(out, len, "%.0f %%", v);
	else
		chart_bytes(out, len, v);
}

int chart_bars(struct buf *out, const char *title, const struct chart_bar *bars,
               size_t n, enum chart_unit unit)
{
	double max = unit == CHART_PERCENT ? 100 : 0;
	double plot_w = W - LEFT - RIGHT, plot_h = H - TOP - BOTTOM, slot;
	char label[32];
	int err;

	for (size_t i = 0; unit == CHART_BYTES && i < n; i++)
		if (bars[i].value > max)
			max = bars[i].value;
	if (max < 1024) /* an axis of "1 B, 0 B, 0 B" says nothing */
		max = unit == CHART_PERCENT ? 100 : 1024;
	slot = n ? plot_w / (double)n : plot_w;
	err = buf_addf(out,
	               "<svg xmlns=\"http://www.w3.org/2000/svg\" "
	               "class=\"chart\" viewBox=\"0 0 %d %d\" width=\"%d\" "
	               "height=\"%d\" role=\"img\" aria-label=\"",
	               W, H, W, H);
	if (!err)
		err = buf_add_html(out, title);
	if (!err)
		err = buf_adds(out, "\">");
	/* the axis: lines and labels at 0, half and the top */
	for (int g = 0; !err && g <= 2; g++) {
		double y = TOP + plot_h - plot_h * g / 2;

		axis_label(label, sizeof(label), max * g / 2, unit);
		err = buf_addf(out,
		               "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" "
		               "x2=\"%d\" y2=\"%.1f\"/><text class=\"axis\" "
		               "x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s"
		               "</text>",
		               LEFT, y, W - RIGHT, y, LEFT - 6, y + 4, label);
	}
	for (size_t i = 0; !err && i < n; i++) {
		const struct chart_bar *b = &bars[i];
		double x = LEFT + slot * (double)i, h;

		if (b->value >= 0) {
			h = plot_h * (b->value > max ? max : b->value) / max;
			err = buf_addf(out,
			               "<rect class=\"bar\" x=\"%.1f\" "
			               "y=\"%.1f\" width=\"%.1f\" "
			               "height=\"%.1f\">",
			               x + slot * 0.1, TOP + plot_h - h,
			               slot * 0.8, h);
			if (!err && b->tip) {
				err = buf_adds(out, "<title>");
				if (!err)
					err = buf_add_html(out, b->tip);
				if (!err)
					err = buf_adds(out, "</title>");
			}
			if (!err)
				err = buf_adds(out, "</rect>");
		}
		if (!err && b->label && *b->label) {
			err = buf_addf(out,
			               "<text class=\"axis\" x=\"%.1f\" "
			               "y=\"%d\" text-anchor=\"middle\">",
			               x + slot / 2, H - 8);
			if (!err)
				err = buf_add_html(out, b->label);
			if (!err)
				err = buf_adds(out, "</text>");
		}
	}
	if (!err)
		err = buf_adds(out, "</svg>\n");
	return err;
}

int chart_gauge(struct buf *out, double used, double limit)
{
	char u[32], l[32];
	double frac;
	int err;

	chart_bytes(u, sizeof(u), used);
	frac = limit > 0 ? used / limit : 1;
	if (frac > 1)
		frac = 1;
	if (frac < 0)
		frac = 0;
	err = buf_addf(out,
	               "<svg xmlns=\"http://www.w3.org/2000/svg\" "
	               "class=\"gauge\" viewBox=\"0 0 %d 40\" width=\"%d\" "
	               "height=\"40\" role=\"img\" aria-label=\"store size\">"
	               "<rect class=\"track\" x=\"0\" y=\"4\" width=\"%d\" "
	               "height=\"20\"/><rect class=\"%s\" x=\"0\" y=\"4\" "
	               "width=\"%.1f\" height=\"20\"/>",
	               W, W, W, frac >= 0.95 && limit > 0 ? "bar full" : "bar",
	               W * frac);
	if (err)
		return err;
	if (limit > 0) {
		chart_bytes(l, sizeof(l), limit);
		err = buf_addf(out,
		               "<text class=\"axis\" x=\"0\" y=\"38\">"
		               "%s of %s (%.0f %%)</text></svg>\n",
		               u, l, 100 * used / limit);
	} else {
		err = buf_addf(out,
		               "<text class=\"axis\" x=\"0\" y=\"38\">"
		               "%s, no limit set</text></svg>\n",
		               u);
	}
	return err;
}
