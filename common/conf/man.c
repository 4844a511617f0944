/* conf_man: the writers made from the table of keys, conf_dump() and
 * conf_man(). */
#include "config.h"

#include <stddef.h>
#include <string.h>

#include "common/buf.h"
#include "common/conf/conf.h"
#include "common/conf/keys.h"
#include "common/isotime.h"
#include "common/url.h"

/* Room for a URL as conf_dump() shows it. */
#define CONF_URL_SHOWN 4096

#ifndef LOCALSTATEDIR
#define LOCALSTATEDIR "/var"
#endif
#ifndef SYSCONFDIR
#define SYSCONFDIR "/etc"
#endif
#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION ""
#endif

/* Appends a value so the parser reads it back unchanged: bare when it
 * can be, else in quotes. */
static int add_value(struct buf *out, const char *v)
{
	size_t n = strlen(v);
	int quote = n == 0 || strchr("\"#;", v[0]) || conf_is_ws(v[0]) ||
	            conf_is_ws(v[n - 1]);
	int err = 0;

	for (size_t i = 1; i < n && !quote; i++)
		quote = (v[i] == '#' || v[i] == ';') && conf_is_ws(v[i - 1]);
	if (!quote)
		return buf_adds(out, v);
	err = buf_adds(out, "\"");
	for (; *v && !err; v++) {
		if (*v == '"' || *v == '\\')
			err = buf_adds(out, "\\");
		if (!err)
			err = buf_add(out, v, 1);
	}
	return err ? err : buf_adds(out, "\"");
}

/* Appends key k of base as "name = value\n". */
static int dump_key(struct buf *out, const void *base, const struct conf_key *k)
{
	const void *f = conf_cfield(base, k);
	const char *unit = "";
	long n;
	int err;

	/* unset: the [larder] value applies, which a comment says */
	if (conf_is_inherited(base, k))
		return buf_addf(out, "# %s: as in [larder]\n", k->name);
	err = buf_addf(out, "%s = ", k->name);
	if (err)
		return err;
	switch (k->type) {
	case T_ENUM:
		err = buf_adds(out, k->values[*(const int *)f]);
		break;
	case T_BOOL:
		err = buf_adds(out, *(const int *)f ? "yes" : "no");
		break;
	case T_SIZE:
		n = *(const long *)f;
		for (int i = 0; i < 3 && n && n % 1024 == 0; i++) {
			n /= 1024;
			unit = i == 0 ? "k" : i == 1 ? "M" : "G";
		}
		err = buf_addf(out, "%ld%s", n, unit);
		break;
	case T_SECONDS:
	case T_COUNT:
		err = buf_addf(out, "%ld", *(const long *)f);
		break;
	case T_PERCENT:
		err = buf_addf(out, "%ld%%", *(const long *)f);
		break;
	case T_TIME: {
		char t[ISOTIME_LEN] = "";

		if (*(const long *)f > 0)
			isotime_format(*(const long *)f, t);
		err = add_value(out, t);
		break;
	}
	case T_URL: {
		/* an upstream's password is not printed (it reads back as
		 * "***": the dump is for reading, the file keeps the value) */
		const char *u = *(char *const *)f ? *(char *const *)f : "";
		char shown[CONF_URL_SHOWN];

		err = add_value(out, url_redact(u, shown, sizeof(shown)));
		break;
	}
	default:
		err =
		    add_value(out, *(char *const *)f ? *(char *const *)f : "");
		break;
	}
	return err ? err : buf_adds(out, "\n");
}

int conf_dump(const struct conf *c, struct buf *out)
{
	int err;

	err = buf_adds(out, "# larder configuration: the effective values, ");
	if (!err && c->source) {
		err = buf_adds(out, "read from\n# ");
		for (const char *s = c->source; *s && !err; s++)
			err = buf_add(out, conf_is_ctl(*s) ? "?" : s, 1);
		err = err ? err : buf_adds(out, "\n");
	} else if (!err) {
		err = buf_adds(out, "from the built-in\n# defaults "
		                    "(no configuration file)\n");
	}
	err = err ? err : buf_adds(out, "\n[larder]\n");
	for (size_t i = 0; i < CONF_NKEYS && !err; i++)
		if (!strcmp(conf_keys[i].section, "larder"))
			err = dump_key(out, c, &conf_keys[i]);
	for (size_t j = 0; j < c->nindex && !err; j++) {
		const struct conf_index *ix = &c->index[j];

		err = buf_addf(out, "\n[index \"%s\"]\n", ix->name);
		for (size_t i = 0; i < CONF_NKEYS && !err; i++) {

			if (strcmp(conf_keys[i].section, "index"))
				continue;
			if (conf_keys[i].types &&
			    !(conf_keys[i].types & CONF_FOR(ix->type)))
				continue;
			err = dump_key(out, ix, &conf_keys[i]);
		}
	}
	for (size_t j = 0; j < c->nregistry && !err; j++) {
		const struct conf_registry *r = &c->registry[j];

		err = buf_addf(out, "\n[registry \"%s\"]\n", r->name);
		for (size_t i = 0; i < CONF_NKEYS && !err; i++) {
			if (strcmp(conf_keys[i].section, "registry"))
				continue;
			/* only a cache has an upstream, a virtual layers */
			if ((r->type != CONF_REGISTRY_CACHE &&
			     !strcmp(conf_keys[i].name, "upstream")) ||
			    (r->type != CONF_REGISTRY_VIRTUAL &&
			     !strcmp(conf_keys[i].name, "layers")))
				continue;
			err = dump_key(out, r, &conf_keys[i]);
		}
	}
	for (size_t j = 0; j < c->nwebhook && !err; j++) {
		const struct conf_webhook *h = &c->webhook[j];

		err = buf_addf(out, "\n[webhook \"%s\"]\n", h->name);
		for (size_t i = 0; i < CONF_NKEYS && !err; i++) {
			if (strcmp(conf_keys[i].section, "webhook"))
				continue;
			/* unset filters stay unset: every index, registry */
			if (conf_is_string(conf_keys[i].type) &&
			    !*(char *const *)conf_cfield(h, &conf_keys[i]))
				continue;
			err = dump_key(out, h, &conf_keys[i]);
		}
	}
	for (size_t j = 0; j < c->npolicy && !err; j++) {
		const struct conf_policy_def *d = &c->policy[j];
		const char *first = d->allow_first ? "allow" : "deny";
		const char *then = d->allow_first ? "deny" : "allow";

		err = buf_addf(out, "\n[policy \"%s\"]\n", d->name);
		/* allow and deny in the order that decides */
		err = err ? err : dump_key(out, d, conf_find_key("policy", first));
		err = err ? err : dump_key(out, d, conf_find_key("policy", then));
		for (size_t i = 0; i < CONF_NKEYS && !err; i++)
			if (!strcmp(conf_keys[i].section, "policy") &&
			    strcmp(conf_keys[i].name, "allow") &&
			    strcmp(conf_keys[i].name, "deny"))
				err = dump_key(out, d, &conf_keys[i]);
	}
	return err;
}

/* Appends s escaped for roff: backslashes, hyphens, and a '.' or '\''
 * that would start a line. */
static int add_roff(struct buf *out, const char *s)
{
	int err = 0;

	for (; *s && !err; s++) {
		if (*s == '\\')
			err = buf_adds(out, "\\e");
		else if (*s == '-')
			err = buf_adds(out, "\\-");
		else if ((*s == '.' || *s == '\'') &&
		         (out->len == 0 || out->data[out->len - 1] == '\n'))
			err = buf_addf(out, "\\&%c", *s);
		else
			err = buf_add(out, s, 1);
	}
	return err;
}

static int type_used(enum conf_type t)
{
	for (size_t i = 0; i < CONF_NKEYS; i++)
		if (conf_keys[i].type == t)
			return 1;
	return 0;
}

/* Appends lines of text as a roff no-fill block. */
static int add_roff_block(struct buf *out, const char *text)
{
	int err = buf_adds(out, ".PP\n.RS 4\n.nf\n");

	err = err ? err : add_roff(out, text);
	return err ? err : buf_adds(out, ".fi\n.RE\n");
}

static int man_keys(struct buf *out, const char *section)
{
	int err = 0;

	for (size_t i = 0; i < CONF_NKEYS && !err; i++) {
		const struct conf_key *k = &conf_keys[i];

		if (strcmp(k->section, section))
			continue;
		err = buf_addf(out, ".TP\n.B %s\n", k->name);
		if (!err && k->type == T_ENUM) {
			for (size_t v = 0; k->values[v] && !err; v++) {
				err = buf_adds(out, v ? " | \\fI" : "\\fI");
				err = err ? err : add_roff(out, k->values[v]);
				err = err ? err : buf_adds(out, "\\fR");
			}
		} else if (!err) {
			err = buf_addf(out, "\\fI%s\\fR",
			               conf_types[k->type].name);
		}
		if (!err && k->inherit) {
			err = buf_adds(out, ", default: as in [larder]");
		} else if (!err && k->def && !k->def[0]) {
			err = buf_adds(out, ", default \\fB\\(dq\\(dq\\fR");
		} else if (!err && k->def) {
			err = buf_adds(out, ", default \\fB");
			err = err ? err : add_roff(out, k->def);
			err = err ? err : buf_adds(out, "\\fR");
		}
		err = err ? err : buf_adds(out, "\n.br\n");
		err = err ? err : add_roff(out, k->help);
		err = err ? err : buf_adds(out, "\n");
	}
	return err;
}

/* The registry sections and the default registry. */
static int man_registries(struct buf *out)
{
	int err;

	err = buf_adds(
	    out, ".SH \"[registry \\(dqNAME\\(dq] SECTIONS\"\n"
	         "Each declares an OCI registry larder caches, served under\n"
	         ".BI /v2/ NAME /\\fR:\n"
	         ".BI \"docker pull \" your.host/NAME/IMAGE:TAG\n"
	         "pulls\n"
	         ".I IMAGE:TAG\n"
	         "from that registry's upstream. A name is one component of "
	         "an image name: 1 to 64 characters of a\\-z and 0\\-9, "
	         "with single\n"
	         ".BR . \", \" _ \" or \" \\-\n"
	         "between them (like\n"
	         ".BR hub \", \" ghcr \" or \" quay\\-io ),\n"
	         "not\n"
	         ".B v2\n"
	         "or\n"
	         ".BR library ,\n"
	         "where clients look for Docker Hub's official images. At "
	         "most 16 registries. The one with\n"
	         ".B default = yes\n"
	         "also serves the names that start with no registry's name, "
	         "which is what a Docker daemon's registry\\-mirrors and "
	         "containerd's hosts.toml mirrors ask for. A file that "
	         "declares any registry replaces the default registry with "
	         "the ones it declares.\n");
	err = err ? err : man_keys(out, "registry");
	err = err ? err
	          : buf_adds(out, ".SH \"DEFAULT REGISTRIES\"\n"
	                          "With no [registry] section larder serves "
	                          "this one, a cache of Docker Hub that is "
	                          "also the default:\n");
	return err ? err : add_roff_block(out, conf_default_registries);
}

/* The webhook sections. */
static int man_webhooks(struct buf *out)
{
	int err = buf_adds(
	    out, ".SH \"[webhook \\(dqNAME\\(dq] SECTIONS\"\n"
	         "Each names a receiver of signed events: an upload, a yank, "
	         "a push, a new release of a cached project. Each event is "
	         "written to the database with the change it reports and "
	         "POSTed later, as JSON signed with HMAC\\-SHA256 "
	         "(X\\-Larder\\-Signature\\-256), by the pool's "
	         "deliverer or\n"
	         ".BR \"larder webhook deliver\" ;\n"
	         "see webhooks.md. A name is 1 to 64 of a\\-z, 0\\-9,\n"
	         ".BR \\- \", \" _ \" and \" . .\n");
	return err ? err : man_keys(out, "webhook");
}

/* The policy sections. */
static int man_policies(struct buf *out)
{
	int err;

	err = buf_adds(
	    out, ".SH \"[policy \\(dqNAME\\(dq] SECTIONS\"\n"
	         "Each is a set of rules on which files of a cache index are "
	         "served; an index names the ones that apply with\n"
	         ".BR policies .\n"
	         "A denied file is left out of the index's pages and a "
	         "request for it is refused (403) with the policy and the "
	         "rule that denied it. See docs/policy.md. At most 16 "
	         "policies.\n");
	return err ? err : man_keys(out, "policy");
}

int conf_man(struct buf *out)
{
	int err;

	err = buf_adds(
	    out, ".\\\" larder.conf(5), made by `larder config man' from the "
	         "table of keys.\n"
	         ".TH LARDER.CONF 5 \"\" \"larder " PACKAGE_VERSION "\" "
	         "\"File Formats Manual\"\n"
	         ".SH NAME\n"
	         "larder.conf \\- configuration file of larder, the "
	         "pull\\-through cache for PyPI and OCI registries\n"
	         ".SH SYNOPSIS\n"
	         ".B " SYSCONFDIR "/larder/larder.conf\n"
	         ".PP\n"
	         "larder reads one configuration file, the first of:\n"
	         ".IP 1. 4\n"
	         "the file given with\n"
	         ".B \\-c\n"
	         ".IR FILE ;\n"
	         ".IP 2. 4\n"
	         "the file named by the environment variable\n"
	         ".BR LARDER_CONFIG ;\n"
	         ".IP 3. 4\n"
	         ".IR " SYSCONFDIR "/larder/larder.conf .\n"
	         ".PP\n"
	         "A file named by\n"
	         ".B \\-c\n"
	         "or\n"
	         ".B LARDER_CONFIG\n"
	         "must exist. When the default file does not exist larder runs "
	         "on its built\\-in defaults: every key at its default, the "
	         "indexes under\n"
	         ".B \"DEFAULT INDEXES\"\n"
	         "and the registry under\n"
	         ".BR \"DEFAULT REGISTRIES\" .\n"
	         ".SH DESCRIPTION\n"
	         "The file is INI, with git\\-config\\-like sections:\n"
	         ".B [larder]\n"
	         "holds the global keys and each\n"
	         ".B [index \\(dq\\fINAME\\fB\\(dq]\n"
	         "declares one package index, each\n"
	         ".B [registry \\(dq\\fINAME\\fB\\(dq]\n"
	         "one OCI registry. Every other line is\n"
	         ".IB key \" = \" value\\fR.\n"
	         "Leading and trailing blanks are ignored. A line that starts "
	         "with\n"
	         ".B #\n"
	         "or\n"
	         ".B ;\n"
	         "is a comment, and so is the rest of a line after a blank "
	         "followed by\n"
	         ".B #\n"
	         "or\n"
	         ".B ;\n"
	         "(in an unquoted value). A value may be put in double quotes, "
	         "inside which\n"
	         ".B \\e\"\n"
	         "and\n"
	         ".B \\e\\e\n"
	         "stand for a quote and a backslash and\n"
	         ".B #\n"
	         "and\n"
	         ".B ;\n"
	         "are plain characters. A key may appear once per section. An "
	         "error names the file, the line, the key, the value and the "
	         "form that was expected, and larder will not start.\n"
	         ".SS Including files\n"
	         "A line\n"
	         ".BI \"include = \" PATTERN\n"
	         "(in a section or outside any) reads the files\n"
	         ".I PATTERN\n"
	         "names, a glob with\n"
	         ".BR * \", \" ? \" and \" [...] ,\n"
	         "in sorted order, as if each stood where the line is: each "
	         "starts outside any section, so it opens its own, and the "
	         "section the line was in goes on after it. A relative "
	         "pattern is relative to the directory of the file that "
	         "includes it. A glob that matches nothing is an empty "
	         "directory and fine; a plain name that is missing is an "
	         "error. A key may still appear once per section across all "
	         "the files, and an error names the included file and its "
	         "line. The packaged\n"
	         ".I " SYSCONFDIR "/larder/larder.conf\n"
	         "and the quick start's end with\n"
	         ".BR \"include = conf.d/*.conf\" :\n"
	         "a place for one's own sections, or configuration "
	         "management's, that an upgrade or a new quick start never "
	         "rewrites. Includes nest at most 8 deep, 128 files in all.\n"
	         ".PP\n"
	         "Values have these types:\n");
	for (size_t t = 0; t < CONF_NTYPES && !err; t++) {
		if (!type_used((enum conf_type)t))
			continue;
		err = buf_addf(out, ".TP\n.I %s\n", conf_types[t].name);
		err = err ? err : add_roff(out, conf_types[t].doc);
		err = err ? err : buf_adds(out, "\n");
	}
	err = err ? err : buf_adds(out, ".SH \"THE [larder] SECTION\"\n");
	err = err ? err : man_keys(out, "larder");
	err = err ? err
	          : buf_adds(out, ".SH \"[index \\(dqNAME\\(dq] SECTIONS\"\n"
	                          "Each declares a package index, served at\n"
	                          ".IB /NAME /simple/\\fR.\n"
	                          "A name is 1 to 100 characters: segments of "
	                          "a\\-z, 0\\-9,\n"
	                          ".BR . \", \" _ \" and \" \\- ,\n"
	                          "separated by single\n"
	                          ".BR / ,\n"
	                          "none of them\n"
	                          ".BR . \" or \" .. ;\n"
	                          "it may not start with\n"
	                          ".B +\n"
	                          "or\n"
	                          ".BR _ ,\n"
	                          "and its first segment may not be\n"
	                          ".BR v2 \", \" +health \", \" +stats \", \" "
	                          "metrics \" or \" "
	                          "_larder ,\n"
	                          "which are larder's own URLs. At most 32 "
	                          "indexes. A file that "
	                          "declares any index replaces all the default "
	                          "indexes with the "
	                          "ones it declares.\n");
	err = err ? err : man_keys(out, "index");
	err = err ? err
	          : buf_adds(out, ".SH \"DEFAULT INDEXES\"\n"
	                          "With no [index] section larder serves "
	                          "these, a cache of PyPI "
	                          "and a virtual index over it:\n");
	err = err ? err : add_roff_block(out, conf_default_indexes);
	err = err ? err : man_registries(out);
	err = err ? err : man_webhooks(out);
	err = err ? err : man_policies(out);
	err = err ? err : buf_adds(out, ".SH EXAMPLE\n");
	err = err ? err : add_roff_block(out, conf_example);
	err = err ? err
	          : buf_adds(out, ".SH ENVIRONMENT\n"
	                          ".TP\n"
	                          ".B LARDER_CONFIG\n"
	                          "The configuration file to read when\n"
	                          ".B \\-c\n"
	                          "is not given.\n"
	                          ".SH FILES\n"
	                          ".TP\n"
	                          ".I " SYSCONFDIR "/larder/larder.conf\n"
	                          "The default configuration file.\n"
	                          ".TP\n"
	                          ".I " SYSCONFDIR "/larder/conf.d/*.conf\n"
	                          "Included by the packaged configuration "
	                          "file, in sorted order.\n"
	                          ".TP\n"
	                          ".I " LOCALSTATEDIR "/lib/larder\n"
	                          "The default\n"
	                          ".BR data_dir .\n"
	                          ".SH \"SEE ALSO\"\n"
	                          ".BR larder (8)\n");
	return err;
}
