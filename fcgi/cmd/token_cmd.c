#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/rand.h>

#include "common/hex.h"
#include "common/http/token.h"
#include "common/names.h"
#include "fcgi/cmd/token_cmd.h"
#include "fcgi/pypi/hosted.h"
#include "storage/db/db.h"

static const char usage_text[] =
    "usage: larder token add --index NAME --actions "
    "upload,yank,delete,read\n"
    "                        [--projects GLOB...] [--expires 90d|never] "
    "[--note TEXT]\n"
    "       larder token add --registry NAME --actions pull,push,delete\n"
    "                        [--repositories GLOB...] [--expires 90d|never] "
    "[--note TEXT]\n"
    "       larder token list\n"
    "       larder token revoke ID\n";

/* Fills hex (2n + 1 bytes) with n random bytes in hex. Returns 0 or EIO. */
static int random_hex(char *hex, size_t n)
{
	unsigned char b[64];

	if (n > sizeof(b) || RAND_bytes(b, (int)n) != 1)
		return EIO;
	hex_encode(b, n, hex);
	return 0;
}

/* Opens the store's database; without one, says so (a command that
 * inspects must not make one). Returns 0 or 2. */
static int open_store(const struct conf *c, int create, struct db **db,
                      FILE *err)
{
	int rc = create ? db_open(c->data_dir, db)
	                : db_open_existing(c->data_dir, db);

	if (rc == ENOENT)
		fprintf(err,
		        "larder token: no larder store in %s (config: %s);"
		        " give the config with -c FILE\n",
		        c->data_dir,
		        c->source ? c->source : "built-in defaults");
	else if (rc)
		fprintf(err,
		        "larder token: cannot open the database in %s: "
		        "%s\n",
		        c->data_dir, strerror(rc));
	return rc ? 2 : 0;
}

/* Appends a --projects value to the list in globs (len bytes). Returns 0
 * or ENAMETOOLONG. */
static int add_globs(char *globs, size_t len, const char *more)
{
	size_t n = strlen(globs);
	int w = snprintf(globs + n, len - n, "%s%s", n ? " " : "", more);

	return w < 0 || (size_t)w >= len - n ? ENAMETOOLONG : 0;
}

/* Checks note, fills in t's note, dates and secret, stores t and prints
 * the token. Returns 0 or 2 (said on err). */
static int store(const struct conf *c, struct db_token *t, const char *note,
                 long long ttl, FILE *out, FILE *err)
{
	char secret[TOKEN_SECRET_HEX + 1], text[TOKEN_TEXT_LEN + 1];
	struct db *db = NULL;
	int rc = 2;

	if (strlen(note) >= sizeof(t->note)) {
		fprintf(err,
		        "larder token add: --note: longer than %zu "
		        "bytes\n",
		        sizeof(t->note) - 1);
		return 2;
	}
	for (const char *p = note; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			fprintf(err, "larder token add: --note: no control "
			             "characters (tabs, newlines)\n");
			return 2;
		}
	snprintf(t->note, sizeof(t->note), "%s", note);
	t->created = (long long)time(NULL);
	t->expires = ttl ? t->created + ttl : 0;
	if (open_store(c, 1, &db, err))
		return 2;
	/* an id already taken (1 in 2^64): draw again */
	for (int tries = 0; tries < 4; tries++) {
		if (random_hex(t->id, TOKEN_ID_HEX / 2) ||
		    random_hex(secret, TOKEN_SECRET_HEX / 2) ||
		    random_hex(t->salt, TOKEN_SALT_HEX / 2)) {
			fprintf(err, "larder token add: no random bytes\n");
			goto done;
		}
		if (token_hash(t->salt, secret, t->hash)) {
			fprintf(err, "larder token add: cannot hash\n");
			goto done;
		}
		rc = db_token_put(db, t);
		if (rc != EEXIST)
			break;
	}
	if (rc) {
		fprintf(err, "larder token add: cannot store the token: %s\n",
		        strerror(rc));
		rc = 2;
		goto done;
	}
	token_format(t->id, secret, text, sizeof(text));
	fprintf(out, "%s\n", text);
	rc = 0;
done:
	memset(secret, 0, sizeof(secret));
	memset(text, 0, sizeof(text));
	db_close(db);
	return rc;
}

/* larder token add --registry: a token whose index column says
 * "registry:NAME", with pull, push and delete, for repository globs. */
static int add_registry(const struct conf *c, const char *registry,
                        const char *actions, const char *globs, int repos,
                        const char *expires, const char *note, FILE *out,
                        FILE *err)
{
	struct db_token t;
	char why[512];
	long long ttl;
	unsigned mask;

	memset(&t, 0, sizeof(t));
	if (repos & 2) {
		fprintf(err, "larder token add: --projects is for a token of "
		             "an --index; a --registry takes --repositories\n");
		return 2;
	}
	if (conf_registry_find(c, registry, strlen(registry)) < 0) {
		fprintf(err,
		        "larder token add: --registry %s: no such registry "
		        "in the config (%s)\n",
		        registry, c->source ? c->source : "built-in defaults");
		return 2;
	}
	if (token_actions_parse(actions, &mask, why, sizeof(why)) ||
	    token_repo_globs_normalize(*globs ? globs : "*", t.projects,
	                               sizeof(t.projects), why, sizeof(why)) ||
	    token_duration_parse(expires, &ttl, why, sizeof(why))) {
		fprintf(err, "larder token add: %s\n", why);
		return 2;
	}
	if (mask & ~TOKEN_REGISTRY_ACTIONS) {
		fprintf(err, "larder token add: a registry's actions are pull, "
		             "push and delete\n");
		return 2;
	}
	snprintf(t.index, sizeof(t.index), TOKEN_REGISTRY_PREFIX "%s",
	         registry);
	token_actions_format(mask, t.actions, sizeof(t.actions));
	return store(c, &t, note, ttl, out, err);
}

static int add(const struct conf *c, int argc, char **argv, FILE *out,
               FILE *err)
{
	const char *index = NULL, *actions = NULL, *expires = "never";
	const char *registry = NULL;
	int repos = 0;
	const char *note = "";
	char globs[2048] = "", why[512];
	struct db_token t;
	long long ttl;
	unsigned mask;

	memset(&t, 0, sizeof(t));
	for (int i = 1; i < argc; i++) {
		const char *opt = argv[i];

		if (i + 1 >= argc || strncmp(opt, "--", 2) != 0) {
			fputs(usage_text, err);
			return 2;
		}
		if (!strcmp(opt, "--index")) {
			index = argv[++i];
		} else if (!strcmp(opt, "--registry")) {
			registry = argv[++i];
		} else if (!strcmp(opt, "--actions")) {
			actions = argv[++i];
		} else if (!strcmp(opt, "--expires")) {
			expires = argv[++i];
		} else if (!strcmp(opt, "--note")) {
			note = argv[++i];
		} else if (!strcmp(opt, "--projects") ||
		           !strcmp(opt, "--repositories")) {
			repos |= !strcmp(opt, "--repositories") ? 1 : 2;
			/* several globs: the flag again, or after it */
			do {
				if (add_globs(globs, sizeof(globs),
				              argv[++i])) {
					fprintf(err, "larder token add: "
					             "--projects: too long\n");
					return 2;
				}
			} while (i + 1 < argc && strncmp(argv[i + 1], "--", 2));
		} else {
			fputs(usage_text, err);
			return 2;
		}
	}
	if (!!index == !!registry || !actions) {
		fprintf(err,
		        "larder token add: --actions and one of --index and "
		        "--registry are required\n%s",
		        usage_text);
		return 2;
	}
	if (registry)
		return add_registry(c, registry, actions, globs, repos, expires,
		                    note, out, err);
	if (repos & 1) {
		fprintf(err, "larder token add: --repositories is for a "
		             "token of a --registry\n");
		return 2;
	}
	if (conf_index_find(c, index) < 0) {
		fprintf(err,
		        "larder token add: --index %s: no such index in "
		        "the config (%s)\n",
		        index, c->source ? c->source : "built-in defaults");
		return 2;
	}
	if (token_actions_parse(actions, &mask, why, sizeof(why)) ||
	    names_globs_normalize(*globs ? globs : "*", t.projects,
	                          sizeof(t.projects), why, sizeof(why)) ||
	    token_duration_parse(expires, &ttl, why, sizeof(why))) {
		fprintf(err, "larder token add: %s\n", why);
		return 2;
	}
	/* a token for changes nothing could ever take is a mistake: every
	 * upload with it would be a 405 */
	if ((mask & (TOKEN_UPLOAD | TOKEN_YANK | TOKEN_DELETE)) &&
	    hosted_target(c, conf_index_find(c, index)) < 0) {
		fprintf(err,
		        "larder token add: --index %s takes no uploads (it "
		        "has no hosted index): upload, yank and delete need a "
		        "hosted index, or a virtual index over one\n",
		        index);
		return 2;
	}
	if (mask & ~TOKEN_ALL_ACTIONS) {
		fprintf(err, "larder token add: an index's actions are upload, "
		             "yank, delete and read\n");
		return 2;
	}
	snprintf(t.index, sizeof(t.index), "%s", index);
	token_actions_format(mask, t.actions, sizeof(t.actions));
	return store(c, &t, note, ttl, out, err);
}

/* Writes unix time t as 2025-01-31T12:00:00Z. */
static void iso_time(long long t, char *out, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) ||
	    !strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, len, "%lld", t);
}

struct list_ctx {
	FILE *out;
	long long now;
};

static void list_one(const struct db_token *t, void *ctx)
{
	const struct list_ctx *l = ctx;
	char created[32], expires[32] = "never";
	const char *state = "active";

	iso_time(t->created, created, sizeof(created));
	if (t->expires)
		iso_time(t->expires, expires, sizeof(expires));
	if (t->revoked)
		state = "revoked";
	else if (t->expires && l->now >= t->expires)
		state = "expired";
	fprintf(l->out, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t->id, t->index,
	        t->actions, t->projects, created, expires, state, t->note);
}

static int list(const struct conf *c, int argc, FILE *out, FILE *err)
{
	struct list_ctx l = {out, (long long)time(NULL)};
	struct db *db = NULL;
	int rc;

	if (argc != 1) {
		fputs(usage_text, err);
		return 2;
	}
	if (open_store(c, 0, &db, err))
		return 2;
	/* a header row names the columns, the two dates above all */
	fputs("ID\tINDEX\tACTIONS\tPROJECTS\tCREATED\tEXPIRES\tSTATE\tNOTE\n",
	      out);
	rc = db_token_each(db, list_one, &l);
	db_close(db);
	if (rc) {
		fprintf(err, "larder token list: %s\n", strerror(rc));
		return 2;
	}
	return 0;
}

static int revoke(const struct conf *c, int argc, char **argv, FILE *err)
{
	struct db *db = NULL;
	int rc;

	if (argc != 2) {
		fputs(usage_text, err);
		return 2;
	}
	if (open_store(c, 0, &db, err))
		return 2;
	rc = db_token_revoke(db, argv[1]);
	db_close(db);
	if (rc == ENOENT) {
		fprintf(err, "larder token revoke: no token %s\n", argv[1]);
		return 1;
	}
	if (rc) {
		fprintf(err, "larder token revoke: %s\n", strerror(rc));
		return 2;
	}
	return 0;
}

int token_cmd(const struct conf *c, int argc, char **argv, FILE *out, FILE *err)
{
	if (argc >= 1 && !strcmp(argv[0], "add"))
		return add(c, argc, argv, out, err);
	if (argc >= 1 && !strcmp(argv[0], "list"))
		return list(c, argc, out, err);
	if (argc >= 1 && !strcmp(argv[0], "revoke"))
		return revoke(c, argc, argv, err);
	fputs(usage_text, err);
	return 2;
}
