/* test_conf_load: configs read from disk: LARDER_CONFIG, missing and bad
 * files, the sample, include. */
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

/* Writes text to dir/name. Returns 0 or -1. */
static int put(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	rc = fputs(text, f) < 0 ? -1 : 0;
	return fclose(f) ? -1 : rc;
}

T(include_directive)
{
	char dir[] = "/tmp/test_conf_inc.XXXXXX", main_conf[PATH_MAX];
	char sub[PATH_MAX], cmd[PATH_MAX + 16], want[PATH_MAX + 200];
	struct conf c;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(sub, sizeof(sub), "%s/conf.d", dir);
	CHECK_INT(mkdir(sub, 0755), 0);
	snprintf(main_conf, sizeof(main_conf), "%s/larder.conf", dir);
	/* the include in [larder]: cache_ttl after it is [larder]'s again;
	 * the files in sorted order, each with its own sections */
	CHECK_INT(put(dir, "larder.conf",
	              "[larder]\nmax_stale = 1h\ninclude = conf.d/*.conf\n"
	              "cache_ttl = 2m\n[index \"pypi\"]\ntype = cache\n"
	              "upstream = https://up/\n"), 0);
	CHECK_INT(put(sub, "20-b.conf",
	              "[index \"b\"]\ntype = virtual\nlayers = a pypi\n"), 0);
	CHECK_INT(put(sub, "10-a.conf", "[index \"a\"]\ntype = hosted\n"), 0);
	CHECK_INT(put(sub, "notes.txt", "not a config\n"), 0);
	CHECK_INT(conf_load(&c, main_conf, errbuf, sizeof(errbuf)), 0);
	if (!errbuf[0]) {
		CHECK_INT(c.cache_ttl, 120);
		CHECK_INT(c.max_stale, 3600);
		CHECK_INT(c.nindex, 3);
		CHECK_STR(c.index[0].name, "a");
		CHECK_STR(c.index[1].name, "b");
		CHECK_STR(c.index[2].name, "pypi");
		conf_free(&c);
	}

	/* an error in an included file names it and its line */
	CHECK_INT(put(sub, "30-c.conf", "[larder]\ncache_ttl = soon\n"), 0);
	CHECK_INT(conf_load(&c, main_conf, errbuf, sizeof(errbuf)), EINVAL);
	snprintf(want, sizeof(want), "%s/30-c.conf:2: cache_ttl = \"soon\"",
	         sub);
	CHECK_CONTAINS(errbuf, want);
	/* a key given in the main file and an included one */
	CHECK_INT(put(sub, "30-c.conf", "[index \"pypi\"]\n"), 0);
	CHECK_INT(conf_load(&c, main_conf, errbuf, sizeof(errbuf)), EINVAL);
	snprintf(want, sizeof(want), "larder.conf:5: duplicate section "
	         "[index \"pypi\"] (first at %s/30-c.conf:1)", sub);
	CHECK_CONTAINS(errbuf, want);
	snprintf(cmd, sizeof(cmd), "%s/30-c.conf", sub);
	unlink(cmd);

	/* an empty conf.d is fine; a missing plain file is not */
	snprintf(cmd, sizeof(cmd), "%s/10-a.conf", sub);
	unlink(cmd);
	snprintf(cmd, sizeof(cmd), "%s/20-b.conf", sub);
	unlink(cmd);
	CHECK_INT(conf_load(&c, main_conf, errbuf, sizeof(errbuf)), 0);
	if (!errbuf[0])
		conf_free(&c);
	snprintf(cmd, sizeof(cmd), "%s/notes.txt", sub);
	unlink(cmd);
	CHECK_INT(rmdir(sub), 0);
	CHECK_INT(conf_load(&c, main_conf, errbuf, sizeof(errbuf)), 0);
	if (!errbuf[0])
		conf_free(&c);
	CHECK_INT(put(dir, "larder.conf", "include = nothere.conf\n"), 0);
	CHECK_INT(conf_load(&c, main_conf, errbuf, sizeof(errbuf)), EINVAL);
	CHECK_CONTAINS(errbuf, "larder.conf:1: include = \"nothere.conf\": ");
	CHECK_CONTAINS(errbuf, "No such file");
	/* a file that includes itself stops, with a reason */
	CHECK_INT(put(dir, "larder.conf", "include = larder.conf\n"), 0);
	CHECK_INT(conf_load(&c, main_conf, errbuf, sizeof(errbuf)), EINVAL);
	CHECK_CONTAINS(errbuf, "nested deeper than 8");
	/* text not read from a file includes nothing */
	CHECK_INT(conf_defaults(&c), 0);
	CHECK_INT(conf_parse(&c, "-", "include = /etc/x.conf\n", 22, errbuf,
	                     sizeof(errbuf)), EINVAL);
	CHECK_CONTAINS(errbuf, "only a config file read from disk");
	conf_free(&c);

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK_INT(system(cmd), 0);
}

/* An include inside a named section: the keys after it are that section's
 * again, whatever sections of the same kind the included file opened (a
 * policy's key once went to the last policy read). */
T(include_inside_a_named_section)
{
	char dir[] = "/tmp/test_conf_inc2.XXXXXX", main_conf[PATH_MAX];
	char path[PATH_MAX];
	struct conf c;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(main_conf, sizeof(main_conf), "%s/larder.conf", dir);
	CHECK_INT(put(dir, "larder.conf",
	              "[policy \"a\"]\ninclude = more.conf\ndefault = deny\n"
	              "[index \"w\"]\ntype = cache\ninclude = hooks.conf\n"
	              "upstream = https://up/w/\n"), 0);
	CHECK_INT(put(dir, "more.conf", "[policy \"b\"]\ndeny = x\n"), 0);
	CHECK_INT(put(dir, "hooks.conf", "[index \"v\"]\ntype = hosted\n"),
	          0);
	CHECK_INT(conf_load(&c, main_conf, errbuf, sizeof(errbuf)), 0);
	CHECK_STR(errbuf, "");
	if (!errbuf[0]) {
		CHECK_INT(c.npolicy, 2);
		CHECK_STR(c.policy[0].name, "a");
		CHECK_INT(c.policy[0].default_deny, 1);
		CHECK_INT(c.policy[1].default_deny, 0);
		CHECK_INT(c.nindex, 2);
		CHECK_STR(c.index[0].name, "w");
		CHECK_STR(c.index[0].upstream, "https://up/w/");
		conf_free(&c);
	}
	for (const char *f = "larder.conf\0more.conf\0hooks.conf\0"; *f;
	     f += strlen(f) + 1) {
		snprintf(path, sizeof(path), "%s/%s", dir, f);
		unlink(path);
	}
	CHECK_INT(rmdir(dir), 0);
}

T(load_from_env)
{
	struct conf c;
	char *path, *real;
	int rc;

	path = temp_file("[larder]\ncache_ttl = 2m\n"
	                 "[index \"mine\"]\ntype = cache\n"
	                 "upstream = https://m/\n");
	CHECK(path != NULL);
	if (!path)
		return;
	setenv("LARDER_CONFIG", path, 1);
	rc = conf_load(&c, NULL, errbuf, sizeof(errbuf));
	CHECK_INT(rc, 0);
	if (!rc) {
		real = realpath(path, NULL);
		CHECK_STR(c.source, real);
		CHECK(c.source && c.source[0] == '/');
		free(real);
		CHECK_INT(c.cache_ttl, 120);
		CHECK_INT(c.nindex, 1);
		CHECK_STR(c.index[0].name, "mine");
		conf_free(&c);
	}

	/* a path given wins over $LARDER_CONFIG, and source is canonical
	 * even when the name given is not */
	setenv("LARDER_CONFIG", "/nonexistent/larder.conf", 1);
	{
		char rel[PATH_MAX];

		snprintf(rel, sizeof(rel), "/tmp/.//%s", path + 5);
		rc = conf_load(&c, rel, errbuf, sizeof(errbuf));
		CHECK_INT(rc, 0);
		if (!rc) {
			CHECK_STR(c.source, path);
			conf_free(&c);
		}
	}
	unsetenv("LARDER_CONFIG");
	unlink(path);
	free(path);
}

T(load_missing_files)
{
	struct conf c;

	setenv("LARDER_CONFIG", "/nonexistent/larder.conf", 1);
	memset(&c, 0x5a, sizeof(c));
	CHECK_INT(conf_load(&c, NULL, errbuf, sizeof(errbuf)), ENOENT);
	CHECK_STR(errbuf, "/nonexistent/larder.conf (from $LARDER_CONFIG): "
	                  "No such file or directory (2)");
	/* nothing to free, and freeing it anyway is harmless */
	CHECK(c.data_dir == NULL);
	CHECK_INT(c.nindex, 0);
	conf_free(&c);
	unsetenv("LARDER_CONFIG");

	CHECK_INT(
	    conf_load(&c, "/nonexistent/given.conf", errbuf, sizeof(errbuf)),
	    ENOENT);
	CHECK_STR(errbuf, "/nonexistent/given.conf: No such file or directory "
	                  "(2)");

	CHECK_INT(conf_load(&c, "/tmp", errbuf, sizeof(errbuf)), EISDIR);
	CHECK_CONTAINS(errbuf, "/tmp: Is a directory");
}

T(load_default_file)
{
	struct conf c;
	int rc;

	/* only when this machine has no default file */
	if (access(SYSCONFDIR "/larder/larder.conf", F_OK) == 0 ||
	    errno != ENOENT) {
		printf("# skipped: " SYSCONFDIR "/larder/larder.conf exists\n");
		return;
	}
	unsetenv("LARDER_CONFIG");
	rc = conf_load(&c, NULL, errbuf, sizeof(errbuf));
	CHECK_INT(rc, 0);
	CHECK(c.source == NULL);
	CHECK_INT(c.nindex, 2);
	CHECK_INT(c.cache_ttl, 300);
	conf_free(&c);
	/* an empty $LARDER_CONFIG is no $LARDER_CONFIG */
	setenv("LARDER_CONFIG", "", 1);
	rc = conf_load(&c, NULL, errbuf, sizeof(errbuf));
	CHECK_INT(rc, 0);
	CHECK(c.source == NULL);
	conf_free(&c);
	unsetenv("LARDER_CONFIG");
}

T(load_bad_files)
{
	struct conf c;
	struct buf big;
	char *path;

	path = temp_file("[larder]\n\nworkers = none\n");
	CHECK(path != NULL);
	if (!path)
		return;
	CHECK_INT(conf_load(&c, path, errbuf, sizeof(errbuf)), EINVAL);
	CHECK_CONTAINS(errbuf, path);
	CHECK_CONTAINS(errbuf, ":3: workers = \"none\": expected a whole");
	CHECK(c.data_dir == NULL);
	unlink(path);
	free(path);

	/* bigger than 1 MiB, even if it is all comment */
	buf_init(&big, 2 << 20);
	while (big.len <= 1024 * 1024)
		buf_adds(&big, "# padding padding padding padding padding\n");
	path = temp_file(buf_str(&big));
	buf_free(&big);
	CHECK(path != NULL);
	if (!path)
		return;
	CHECK_INT(conf_load(&c, path, errbuf, sizeof(errbuf)), EFBIG);
	CHECK_CONTAINS(errbuf, "bigger than 1048576 bytes");
	unlink(path);
	free(path);
}

T(sample_config)
{
	static const char *const index_keys[] = {"type", "upstream", "layers",
	                                         "trusted_hosts"};
	struct conf c, def;
	struct buf want, got, on;
	char *text, lkeys[32][64], pat[80];
	const char *line;
	size_t n, nkeys = 0;
	int in_larder = 0;

	text = read_all(SRCDIR "/conf/larder.conf");
	CHECK(text != NULL);
	if (!text)
		return;
	/* read as larder reads it: its include of conf.d/ finds nothing */
	CHECK_INT(conf_load(&c, SRCDIR "/conf/larder.conf", errbuf,
	                    sizeof(errbuf)), 0);
	CHECK_STR(errbuf, "");
	CHECK_CONTAINS(text, "\ninclude = conf.d/*.conf\n");
	free(c.source); /* the dump names its source */
	c.source = NULL;
	/* as shipped it is exactly the defaults */
	CHECK_INT(conf_defaults(&def), 0);
	CHECK_STR(dump(&c, &got), dump(&def, &want));
	buf_free(&got);
	conf_free(&c);

	/* the [larder] keys, from the dump so none is missed */
	for (line = buf_str(&want); *line; line += n + (line[n] == '\n')) {
		n = strcspn(line, "\n");
		if (line[0] == '[')
			in_larder = !strncmp(line, "[larder]", 8);
		else if (in_larder && nkeys < 32 &&
		         sscanf(line, "%63[a-z_] = ", lkeys[nkeys]) == 1)
			nkeys++;
	}
	CHECK_INT(nkeys, 29);
	for (size_t i = 0; i < nkeys; i++) {
		snprintf(pat, sizeof(pat), "\n# %s = ", lkeys[i]);
		CHECK_CONTAINS(text, pat);
	}
	for (size_t i = 0; i < 4; i++) {
		snprintf(pat, sizeof(pat), "%s = ", index_keys[i]);
		CHECK_CONTAINS(text, pat);
	}
	/* each registry key is described, and there is an example of
	 * another registry */
	for (size_t i = 0; i < 8; i++) {
		snprintf(pat, sizeof(pat), "\n#   %s = ", registry_keys[i]);
		CHECK_CONTAINS(text, pat);
	}
	CHECK_CONTAINS(text, "\n[registry \"hub\"]\n");
	CHECK_CONTAINS(text, "\n# [registry \"ghcr\"]\n");

	/* uncommenting each "# key = default" line changes nothing (but
	 * data_dir, which depends on the build) */
	buf_init(&on, 1 << 20);
	for (line = text; *line; line += n + (line[n] == '\n')) {
		int uncomment = 0;

		n = strcspn(line, "\n");
		for (size_t i = 0; i < nkeys && !strncmp(line, "# ", 2); i++) {
			snprintf(pat, sizeof(pat), "# %s = ", lkeys[i]);
			if (!strncmp(line, pat, strlen(pat)))
				uncomment = 1;
		}
		if (!strncmp(line, "# trusted_hosts = files.pythonhosted.org\n",
		             41))
			uncomment = 1;
		if (!strncmp(line, "include = ", 10))
			continue; /* text, not a file: it includes nothing */
		buf_add(&on, line + (uncomment ? 2 : 0),
		        n - (uncomment ? 2 : 0));
		buf_adds(&on, "\n");
	}
	CHECK_CONTAINS(buf_str(&on), "\ncache_ttl = 300\n");
	CHECK_CONTAINS(buf_str(&on), "\nworkers = 4\n");
	CHECK_CONTAINS(buf_str(&on), "\ntrusted_hosts = files.python");
	CHECK_INT(parse(&c, buf_str(&on)), 0);
	CHECK_STR(errbuf, "");
	free(c.data_dir);
	c.data_dir = strdup(def.data_dir);
	CHECK_STR(dump(&c, &got), buf_str(&want));
	buf_free(&got);
	buf_free(&want);
	buf_free(&on);
	conf_free(&c);
	conf_free(&def);
	free(text);
}

int main(void)
{
	RUN(include_directive);
	RUN(include_inside_a_named_section);
	RUN(load_from_env);
	RUN(load_missing_files);
	RUN(load_default_file);
	RUN(load_bad_files);
	RUN(sample_config);
	return t_done();
}
