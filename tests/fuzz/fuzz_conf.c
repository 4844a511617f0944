/* libFuzzer target: the config parser. Any text either fails with a
 * message or parses; what parses dumps to a file that parses again to the
 * same dump. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/conf/conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct conf c, again;
	struct buf one, two;
	char err[512];

	if (conf_defaults(&c))
		return 0;
	if (conf_parse(&c, "fuzz", (const char *)d, n, err, sizeof(err))) {
		if (!err[0])
			abort(); /* an error always says why */
		conf_free(&c);
		return 0;
	}
	buf_init(&one, 1 << 20);
	buf_init(&two, 1 << 20);
	if (conf_dump(&c, &one) == 0 && conf_defaults(&again) == 0) {
		if (conf_parse(&again, "dump", one.data, one.len, err,
			       sizeof(err)))
			abort();
		conf_dump(&again, &two);
		if (strcmp(buf_str(&one), buf_str(&two)) != 0)
			abort();
		conf_free(&again);
	}
	buf_free(&one);
	buf_free(&two);
	conf_free(&c);
	return 0;
}
