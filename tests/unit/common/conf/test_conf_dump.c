/* test_conf_dump: what the key table writes: the dump that parses back, and
 * the man page. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include "common/buf.h"
#include "common/conf/conf.h"
#include "common/url.h"
#include "tests/unit/common/conf/conf_t.h"
#include "tests/unit/t.h"

#ifndef SRCDIR
#define SRCDIR "."
#endif
#ifndef SYSCONFDIR
#define SYSCONFDIR "/etc"
#endif
#ifndef LOCALSTATEDIR
#define LOCALSTATEDIR "/var"
#endif



/* Undoes the roff escapes conf_man uses, for reading text back. */
static void unroff(char *s)
{
	char *w = s;

	while (*s) {
		if (s[0] == '\\' && s[1] == '-') {
			*w++ = '-';
			s += 2;
		} else if (s[0] == '\\' && s[1] == 'e') {
			*w++ = '\\';
			s += 2;
		} else if (s[0] == '\\' && s[1] == '&') {
			s += 2;
		} else {
			*w++ = *s++;
		}
	}
	*w = '\0';
}


T(dump_round_trip)
{
	struct conf c;
	struct buf b;

	CHECK_INT(conf_defaults(&c), 0);
	CHECK_CONTAINS(dump(&c, &b), "built-in");
	CHECK_CONTAINS(buf_str(&b),
	               "\n[larder]\ndata_dir = " LOCALSTATEDIR "/lib/larder\n");
	CHECK_CONTAINS(buf_str(&b), "\n[index \"root/pypi\"]\ntype = virtual\n"
	                            "layers = pypi\n");
	buf_free(&b);
	round_trip(&c);
	conf_free(&c);

	/* values that need quoting, units, every enum */
	CHECK_INT(parse(&c,
	                "[larder]\n"
	                "data_dir = \"/srv/odd #dir ;x \\\"q\\\" \\\\\"\n"
	                "sendfile = stream\n"
	                "sendfile_prefix = /files/\n"
	                "cache_ttl = 1d\nmax_stale = 0\n"
	                "negative_ttl = 90s\nconnect_timeout = 1\n"
	                "fetch_timeout = 2h\nmax_page_size = 1536k\n"
	                "trust_forwarded = on\nmax_requests = 0\n"
	                "workers = 32\n"
	                "[index \"hosted/x\"]\ntype = cache\n"
	                "upstream = https://u:p@h:8443/s\n"
	                "trusted_hosts = \"\"\n"
	                "[index \"v\"]\ntype = virtual\n"
	                "layers = w hosted/x\n"
	                "[index \"w\"]\ntype = virtual\nlayers = hosted/x\n"),
	          0);
	CHECK_CONTAINS(dump(&c, &b), "max_page_size = 1536k\n");
	CHECK_CONTAINS(buf_str(&b), "cache_ttl = 86400\n");
	CHECK_CONTAINS(buf_str(&b), "trusted_hosts = \"\"\n");
	/* larder config check never prints an upstream's password */
	CHECK_CONTAINS(buf_str(&b), "upstream = https://u:***@h:8443/s/\n");
	CHECK_INT(strstr(buf_str(&b), "u:p@") != NULL, 0);
	CHECK_CONTAINS(buf_str(&b), "data_dir = \"/srv/odd #dir ;x \\\"q\\\" "
	                            "\\\\\"\n");
	buf_free(&b);
	round_trip(&c);
	conf_free(&c);
	CHECK_INT(parse_larder(&c, "max_page_size", "3"), 0);
	round_trip(&c);
	conf_free(&c);

	/* the built-in registry, and declared ones with every key */
	CHECK_INT(conf_defaults(&c), 0);
	CHECK_CONTAINS(dump(&c, &b),
	               "\n[registry \"hub\"]\n"
	               "upstream = https://registry-1.docker.io/\n"
	               "cache_ttl = 300\nmax_stale = 604800\n"
	               "trusted_hosts = " REGISTRY_HOSTS "\n"
	               "username = \"\"\npassword_file = \"\"\n"
	               "library_prefix = auto\ndefault = yes\n");
	buf_free(&b);
	conf_free(&c);
	CHECK_INT(parse(&c, "[registry \"ghcr\"]\n"
	                    "upstream = https://ghcr.io\n"
	                    "cache_ttl = 1m\nmax_stale = 0\n"
	                    "trusted_hosts = \"\"\n"
	                    "username = \"bot #1; \\\"x\\\"\"\n"
	                    "password_file = /etc/larder/ghcr.token\n"
	                    "library_prefix = no\n"
	                    "[registry \"quay-io\"]\n"
	                    "upstream = http://127.0.0.1:5000/\n"
	                    "trusted_hosts = *.cdn.example a.example:8443\n"
	                    "library_prefix = yes\ndefault = on\n"),
	          0);
	CHECK_CONTAINS(dump(&c, &b), "username = \"bot #1; \\\"x\\\"\"\n");
	CHECK_CONTAINS(buf_str(&b), "\n[registry \"quay-io\"]\n");
	CHECK_CONTAINS(buf_str(&b), "default = yes\n");
	CHECK_CONTAINS(buf_str(&b), "library_prefix = no\n");
	buf_free(&b);
	round_trip(&c);
	conf_free(&c);

	/* the source goes in the header, and a control character in it
	 * cannot break the file */
	CHECK_INT(conf_defaults(&c), 0);
	c.source = strdup("/etc/larder/a\nb.conf");
	CHECK_CONTAINS(dump(&c, &b), "read from\n# /etc/larder/a?b.conf\n");
	buf_free(&b);
	round_trip(&c);
	conf_free(&c);
}

T(dump_buffer_limit)
{
	struct conf c;
	struct buf b;

	CHECK_INT(conf_defaults(&c), 0);
	buf_init(&b, 64);
	CHECK_INT(conf_dump(&c, &b), E2BIG);
	buf_free(&b);
	buf_init(&b, 64);
	CHECK_INT(conf_man(&b), E2BIG);
	buf_free(&b);
	conf_free(&c);
}

T(man_page)
{
	static const char *const index_keys[] = {"type", "upstream", "layers",
	                                         "trusted_hosts"};
	static const char *const parts[] = {
	    ".TH LARDER.CONF 5",
	    ".SH NAME",
	    ".SH SYNOPSIS",
	    ".SH DESCRIPTION",
	    ".SH \"THE [larder] SECTION\"",
	    "SECTIONS\"",
	    ".SH \"DEFAULT INDEXES\"",
	    ".SH EXAMPLE",
	    ".SH FILES",
	    ".SH \"SEE ALSO\"",
	    ".BR larder (8)",
	    "LARDER_CONFIG",
	    SYSCONFDIR "/larder/larder.conf",
	    "x\\-accel\\-redirect",
	    "seconds",
	    "default \\fB300\\fR",
	    "default \\fB64M\\fR",
	    "files.pythonhosted.org",
	    "https://pypi.org/simple/",
	    "v2",
	    "+health",
	    "_larder",
	    ".SH \"[registry \\(dqNAME\\(dq] SECTIONS\"",
	    ".SH \"DEFAULT REGISTRIES\"",
	    "https://registry\\-1.docker.io",
	    "default \\fB5m\\fR",
	    "default \\fB7d\\fR",
	    "default \\fB\\(dq\\(dq\\fR",
	    "\\fIauto\\fR | \\fIyes\\fR | \\fIno\\fR",
	    "*.cloudfront.net",
	    "registry\\-mirrors",
	    "library",
	};
	struct conf c;
	struct buf man, d;
	char *ex, *end, key[64];
	const char *line;

	buf_init(&man, 1 << 20);
	CHECK_INT(conf_man(&man), 0);
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		CHECK_CONTAINS(buf_str(&man), parts[i]);

	/* every key, taken from a dump so none is missed */
	CHECK_INT(conf_defaults(&c), 0);
	dump(&c, &d);
	for (line = buf_str(&d); line && *line; line = strchr(line, '\n')) {
		if (*line == '\n')
			line++;
		if (sscanf(line, "%63[a-z_] = ", key) == 1 &&
		    strstr(line, " = ")) {
			char want[80];

			snprintf(want, sizeof(want), ".B %s\n", key);
			CHECK_CONTAINS(buf_str(&man), want);
		}
	}
	for (size_t i = 0; i < 4; i++) {
		char want[80];

		snprintf(want, sizeof(want), ".TP\n.B %s\n", index_keys[i]);
		CHECK_CONTAINS(buf_str(&man), want);
	}
	/* and the registry keys, after the registry part begins */
	line = strstr(buf_str(&man), "[registry \\(dqNAME\\(dq] SECTIONS");
	CHECK(line != NULL);
	for (size_t i = 0; line && i < 8; i++) {
		char want[80];

		snprintf(want, sizeof(want), ".TP\n.B %s\n", registry_keys[i]);
		CHECK_CONTAINS(line, want);
	}
	buf_free(&d);
	conf_free(&c);

	/* the EXAMPLE is a valid configuration */
	ex = strstr(buf_str(&man), ".SH EXAMPLE\n");
	CHECK(ex != NULL);
	if (ex) {
		ex = strstr(ex, ".nf\n");
		CHECK(ex != NULL);
	}
	if (ex) {
		ex = strdup(ex + 4);
		end = ex ? strstr(ex, ".fi\n") : NULL;
		CHECK(end != NULL);
		if (end) {
			*end = '\0';
			unroff(ex);
			CHECK_INT(parse(&c, ex), 0);
			CHECK_STR(errbuf, "");
			CHECK_INT(c.nindex, 4);
			CHECK_INT(c.index[3].policy, CONF_POLICY_PRIVATE_FIRST);
			CHECK_INT(c.sendfile, CONF_SENDFILE_XSENDFILE);
			CHECK_INT(c.nregistry, 2);
			CHECK_INT(conf_registry_default(&c), 0);
			CHECK_INT(conf_registry_find(&c, "ghcr", 4), 1);
			conf_free(&c);
		}
		free(ex);
	}
	/* no line starts with the other roff control character */
	CHECK(buf_str(&man)[0] == '.');
	CHECK(strstr(buf_str(&man), "\n'") == NULL);
	buf_free(&man);
}

int main(void)
{
	RUN(dump_round_trip);
	RUN(dump_buffer_limit);
	RUN(man_page);
	return t_done();
}
