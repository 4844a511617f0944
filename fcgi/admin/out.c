/* out: a page written into a buf with one error (out.h). */
#include "config.h"

#include <stdarg.h>

#include "common/json.h"
#include "fcgi/admin/out.h"

void out_add(struct out *o, const char *s)
{
	if (!o->err)
		o->err = buf_adds(&o->b, s);
}

void out_addf(struct out *o, const char *fmt, ...)
{
	va_list ap;

	if (o->err)
		return;
	va_start(ap, fmt);
	o->err = buf_vaddf(&o->b, fmt, ap);
	va_end(ap);
}

void out_html(struct out *o, const char *s)
{
	if (!o->err)
		o->err = buf_add_html(&o->b, s ? s : "");
}

void out_jstr(struct out *o, const char *s)
{
	if (!o->err)
		o->err = s ? json_put_string(&o->b, s) : buf_adds(&o->b, "null");
}
