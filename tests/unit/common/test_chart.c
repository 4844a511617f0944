#include "config.h"

#include <string.h>

#include "common/chart.h"
#include "tests/unit/t.h"

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

T(bytes_for_people)
{
	char s[32];

	chart_bytes(s, sizeof(s), 0);
	CHECK_STR(s, "0 B");
	chart_bytes(s, sizeof(s), 1023);
	CHECK_STR(s, "1023 B");
	chart_bytes(s, sizeof(s), 1536);
	CHECK_STR(s, "1.5 KiB");
	chart_bytes(s, sizeof(s), 3.0 * 1024 * 1024 * 1024);
	CHECK_STR(s, "3.0 GiB");
	chart_bytes(s, sizeof(s), 1e30);
	CHECK_CONTAINS(s, "PiB");
}

T(bars_percent)
{
	struct chart_bar b[4] = {
	    {100, "00", "all hits"},
	    {50, "", NULL},
	    {-1, "02", "no requests"}, /* no data: no bar */
	    {250, NULL, NULL},         /* clipped to the top */
	};
	struct buf out;

	buf_init(&out, 1 << 20);
	CHECK_INT(chart_bars(&out, "hit <ratio>", b, 4, CHART_PERCENT), 0);
	CHECK_CONTAINS(buf_str(&out), "<svg ");
	CHECK_CONTAINS(buf_str(&out), "aria-label=\"hit &lt;ratio&gt;\"");
	CHECK_INT(count(buf_str(&out), "<rect class=\"bar\""), 3);
	/* the plot is 146 high and 520 wide: a full bar is all of it, half is
	 * half */
	CHECK_CONTAINS(buf_str(&out), "y=\"10.0\" width=\"104.0\" "
	                              "height=\"146.0\"><title>all hits");
	CHECK_CONTAINS(buf_str(&out), "height=\"73.0\">");
	CHECK_INT(count(buf_str(&out), "height=\"146.0\""), 2);
	CHECK_CONTAINS(buf_str(&out), ">100 %</text>");
	CHECK_CONTAINS(buf_str(&out), ">50 %</text>");
	CHECK_CONTAINS(buf_str(&out), ">02</text>");
	CHECK(strstr(buf_str(&out), "no requests") == NULL);
	CHECK(strstr(buf_str(&out), "<script") == NULL);
	CHECK_CONTAINS(buf_str(&out), "</svg>");
	buf_free(&out);
}

T(bars_bytes_scale_to_the_largest)
{
	struct chart_bar b[2] = {{2048, "a", NULL}, {1024, "b", NULL}};
	struct buf out;

	buf_init(&out, 1 << 20);
	CHECK_INT(chart_bars(&out, "saved", b, 2, CHART_BYTES), 0);
	CHECK_CONTAINS(buf_str(&out), ">2.0 KiB</text>");
	CHECK_CONTAINS(buf_str(&out), ">1.0 KiB</text>");
	CHECK_CONTAINS(buf_str(&out), "height=\"146.0\"");
	CHECK_CONTAINS(buf_str(&out), "height=\"73.0\"");
	buf_reset(&out);
	/* all zeros: an axis to 1 KiB, flat bars, no division by zero */
	b[0].value = b[1].value = 0;
	CHECK_INT(chart_bars(&out, "saved", b, 2, CHART_BYTES), 0);
	CHECK_INT(count(buf_str(&out), "height=\"0.0\""), 2);
	CHECK_CONTAINS(buf_str(&out), ">1.0 KiB</text>");
	CHECK_CONTAINS(buf_str(&out), ">512 B</text>");
	buf_free(&out);
}

T(bars_buffer_limit)
{
	struct chart_bar b[200];
	struct buf out;

	for (int i = 0; i < 200; i++)
		b[i] = (struct chart_bar){i, "x", "tip"};
	buf_init(&out, 512);
	CHECK(chart_bars(&out, "big", b, 200, CHART_PERCENT) != 0);
	buf_free(&out);
}

T(gauge)
{
	struct buf out;

	buf_init(&out, 1 << 16);
	CHECK_INT(chart_gauge(&out, 512.0 * 1024 * 1024, 1024.0 * 1024 * 1024),
	          0);
	CHECK_CONTAINS(buf_str(&out), "512.0 MiB of 1.0 GiB (50 %)");
	CHECK_CONTAINS(buf_str(&out), "width=\"300.0\"");
	buf_reset(&out);
	CHECK_INT(chart_gauge(&out, 2048, 1024), 0);
	CHECK_CONTAINS(buf_str(&out), "class=\"bar full\"");
	CHECK_CONTAINS(buf_str(&out), "(200 %)");
	buf_reset(&out);
	CHECK_INT(chart_gauge(&out, 100, 0), 0);
	CHECK_CONTAINS(buf_str(&out), "100 B, no limit set");
	buf_free(&out);
}

int main(void)
{
	RUN(bytes_for_people);
	RUN(bars_percent);
	RUN(bars_bytes_scale_to_the_largest);
	RUN(bars_buffer_limit);
	RUN(gauge);
	return t_done();
}
