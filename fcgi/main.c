/* larder: a pull-through cache for PyPI, as a FastCGI or CGI application.
 *
 *   larder                       FastCGI worker (listening socket on fd 0),
 *                                or CGI (GATEWAY_INTERFACE set)
 *   larder serve ...             preforking FastCGI server (or on the
 *                                socket systemd passes)
 *   larder config check [-c F]   validate a config, print effective values
 *   larder config man            print larder.conf(5)
 *   larder fsck [-c F] [--repair]  check the store
 *   larder gc [-c F] [--dry-run] [--max-size SIZE]  keep it in its budget
 *   larder warm ...              fill a running larder's cache
 *   larder token add|list|revoke [-c F] ...  upload and read tokens
 *   larder policy import-osv|check ...        OSV advisories, a policy's
 *                                             word on a project
 *   larder yank|unyank|remove INDEX PROJECT VERSION ...   a hosted
 *                                index's releases
 *   larder --version
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/conf/conf.h"
#include "common/conf/keys.h"
#include "common/oci/policy.h"
#include "common/pypi/policy.h"
#include "fcgi/cmd/cmd.h"
#include "fcgi/cmd/hosted_cmd.h"
#include "fcgi/cmd/policy_cmd.h"
#include "fcgi/cmd/search_cmd.h"
#include "fcgi/cmd/token_cmd.h"
#include "fcgi/cmd/warm.h"
#include "fcgi/cmd/webhook_cmd.h"
#include "fcgi/dispatch.h"
#include "fcgi/oci/push.h"
#include "fcgi/server/loop.h"
#include "fcgi/server/pool.h"
#include "fcgi/server/serve.h"
#include "storage/blob.h"
#include "storage/fsck.h"
#include "storage/gc.h"
#include "storage/stats.h"
#include "storage/webhook.h"

static void usage(FILE *f)
{
	fputs("usage: larder serve [-c FILE] [--listen HOST:PORT|unix:PATH] "
	      "[--workers N] [--user NAME]\n"
	      "       larder config check [-c FILE]\n"
	      "       larder config man\n"
	      "       larder fsck [-c FILE] [--repair]\n"
	      "       larder fsck [-c FILE] --scrub [--budget TIME] "
	      "[--bytes SIZE]\n"
	      "       larder gc [-c FILE] [--dry-run] [--max-size SIZE]\n"
	      "       larder search reindex [-c FILE]\n"
	      "       larder warm [--url BASE] -r FILE ... | --image REF ... "
	      "(larder warm -h)\n"
	      "       larder token add [-c FILE] --index NAME --actions "
	      "upload,yank,delete,read\n"
	      "                        [--projects GLOB...] [--expires "
	      "90d|never] [--note TEXT]\n"
	      "       larder token add [-c FILE] --registry NAME --actions "
	      "pull,push,delete\n"
	      "                        [--repositories GLOB...] [--expires "
	      "90d|never] [--note TEXT]\n"
	      "       larder token list [-c FILE]\n"
	      "       larder token revoke [-c FILE] ID\n"
	      "       larder policy import-osv [-c FILE] OSV.json...\n"
	      "       larder policy check [-c FILE] INDEX PROJECT [VERSION]\n"
	      "       larder yank [-c FILE] INDEX PROJECT VERSION "
	      "[--reason TEXT]\n"
	      "       larder unyank [-c FILE] INDEX PROJECT VERSION\n"
	      "       larder remove [-c FILE] [--force] INDEX PROJECT VERSION "
	      "[FILENAME]\n"
	      "       larder webhook deliver [-c FILE]\n"
	      "       larder webhook test [-c FILE] NAME\n"
	      "       larder --version\n"
	      "Started by a web server with a listening socket on fd 0, larder "
	      "is a FastCGI\nworker; with GATEWAY_INTERFACE set, a CGI "
	      "program.\n", f);
}

/* Returns 1 when fd 0 is a listening socket (FastCGI spawned us). */
static int fd0_listening(void)
{
	int yes = 0;
	socklen_t len = sizeof(yes);

	return getsockopt(0, SOL_SOCKET, SO_ACCEPTCONN, &yes, &len) == 0 &&
	       yes;
}

/* $LARDER_WORKERS, or 0 when unset or not a number of workers. */
static long env_workers(void)
{
	const char *v = getenv("LARDER_WORKERS");
	char *end;
	long n;

	if (!v || !*v)
		return 0;
	n = strtol(v, &end, 10);
	if (*end || n < 1 || n > POOL_MAX) {
		fprintf(stderr, "larder: LARDER_WORKERS=%s: expected 1..%d\n",
			v, POOL_MAX);
		return 0;
	}
	return n;
}

static int config_cmd(int argc, char **argv)
{
	struct conf c;
	struct buf out;
	const char *path = NULL;
	int rc;

	buf_init(&out, 1 << 20);
	if (argc >= 2 && strcmp(argv[1], "man") == 0 && argc == 2) {
		rc = conf_man(&out);
		fputs(buf_str(&out), stdout);
		buf_free(&out);
		return rc ? 1 : 0;
	}
	if (argc < 2 || strcmp(argv[1], "check") != 0) {
		usage(stderr);
		return 2;
	}
	if (argc == 4 && strcmp(argv[2], "-c") == 0)
		path = argv[3];
	else if (argc != 2) {
		usage(stderr);
		return 2;
	}
	if (cmd_load(&c, path))
		return 1;
	rc = conf_dump(&c, &out);
	fputs(buf_str(&out), stdout);
	buf_free(&out);
	conf_free(&c);
	return rc ? 1 : 0;
}

/* Reads v as a value of the [larder] key named key (its type's forms:
 * seconds as 90, 5m, 2h; sizes as 512k, 64M, 1G) into *out. Returns 0,
 * or 2 having said what is wrong with option opt. */
static int option_value(const char *opt, const char *key, const char *v,
			const char *forms, long *out)
{
	const struct conf_key *k = conf_find_key("larder", key);
	const char *why = NULL, *form = NULL;
	struct conf scratch;

	memset(&scratch, 0, sizeof(scratch));
	if (!k || conf_set_value(&scratch, k, v, &why, &form)) {
		fprintf(stderr, "larder fsck: %s \"%s\": expected %s\n", opt, v,
			forms);
		return 2;
	}
	*out = *(long *)conf_field(&scratch, k);
	return 0;
}

/* larder fsck [-c FILE] [--repair]: exit 0 when the store was clean or
 * --repair repaired everything it found, 1 when something was found and
 * is still wrong, 2 on usage or I/O error. --scrub [--budget TIME]
 * [--bytes SIZE]: a slice of the blobs checked, bad ones quarantined
 * (storage/fsck.h fsck_scrub). */
static int fsck_cmd(int argc, char **argv)
{
	struct fsck_scrub_state ss;
	struct fsck_report r;
	const char *path = NULL;
	struct db *db = NULL;
	struct conf c;
	long budget = 0, bytes = 0;
	int repair = 0, scrub = 0, rc;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--repair") == 0) {
			repair = 1;
		} else if (strcmp(argv[i], "--scrub") == 0) {
			scrub = 1;
		} else if (strcmp(argv[i], "--budget") == 0 && i + 1 < argc) {
			if (option_value("--budget", "cache_ttl", argv[++i],
					 "a time (90, 90s, 5m, 2h)", &budget))
				return 2;
		} else if (strcmp(argv[i], "--bytes") == 0 && i + 1 < argc) {
			if (option_value("--bytes", "max_size", argv[++i],
					 "a size in bytes (65536, 512k, 64M, "
					 "1G)", &bytes))
				return 2;
		} else if (strcmp(argv[i], "-c") == 0 && i + 1 < argc) {
			path = argv[++i];
		} else {
			usage(stderr);
			return 2;
		}
	}
	if ((budget || bytes) && !scrub) {
		fprintf(stderr, "larder fsck: --budget and --bytes go with "
			"--scrub\n");
		return 2;
	}
	if (scrub && repair) {
		fprintf(stderr, "larder fsck: --scrub or --repair, not both "
			"(a scrub quarantines what it finds bad)\n");
		return 2;
	}
	if (cmd_load(&c, path))
		return 2;
	if (cmd_become_owner("fsck", c.data_dir)) {
		conf_free(&c);
		return 2;
	}
	/* it inspects a store: it must not make one where there is none */
	rc = db_open_existing(c.data_dir, &db);
	if (rc == ENOENT) {
		fprintf(stderr, "larder fsck: no larder store in %s (config: "
			"%s); give the config with -c FILE\n", c.data_dir,
			c.source ? c.source : "built-in defaults");
		conf_free(&c);
		return 2;
	}
	if (!rc && scrub)
		rc = fsck_scrub(db, c.data_dir, budget, bytes, stdout, &r, &ss);
	else if (!rc)
		rc = fsck_run(db, c.data_dir, repair, c.gc_grace, stdout, &r);
	db_close(db);
	conf_free(&c);
	if (rc)
		return 2;
	if (fsck_clean(&r))
		return 0;
	return (repair || scrub) && fsck_all_repaired(&r) ? 0 : 1;
}

/* larder gc [-c FILE] [--dry-run] [--max-size SIZE]: exit 0 when it ran,
 * 2 on usage or I/O error (storage/gc.h gc_command). */
static int gc_cmd(int argc, char **argv)
{
	const char *path = NULL, *max = NULL;
	char text[128], err[1024];
	struct db *db = NULL;
	struct conf c;
	int dry_run = 0, rc;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--dry-run") == 0)
			dry_run = 1;
		else if (strcmp(argv[i], "-c") == 0 && i + 1 < argc)
			path = argv[++i];
		else if (strcmp(argv[i], "--max-size") == 0 && i + 1 < argc)
			max = argv[++i];
		else {
			usage(stderr);
			return 2;
		}
	}
	if (cmd_load(&c, path))
		return 2;
	/* through the config's own parser: the same forms and messages */
	snprintf(text, sizeof(text), "[larder]\nmax_size = \"%.80s\"\n",
		 max ? max : "");
	if (max && conf_parse(&c, "--max-size", text, strlen(text), err,
			      sizeof(err))) {
		const char *why = err, *sp;

		/* the value came from the command line, not a file's line:
		 * "--max-size:2: max_size = " says nothing more */
		if (!strncmp(why, "--max-size:", 11) &&
		    (sp = strchr(why, ' ')) != NULL)
			why = sp + 1;
		if (!strncmp(why, "max_size = ", 11))
			why += 11;
		fprintf(stderr, "larder gc: --max-size %s\n", why);
		conf_free(&c);
		return 2;
	}
	if (cmd_become_owner("gc", c.data_dir)) {
		conf_free(&c);
		return 2;
	}
	rc = db_open_existing(c.data_dir, &db);
	if (rc == ENOENT)
		fprintf(stderr, "larder gc: no larder store in %s (config: "
			"%s); give the config with -c FILE\n", c.data_dir,
			c.source ? c.source : "built-in defaults");
	/* what it evicts is counted with the workers' evictions */
	if (!rc && !dry_run)
		stats_open(c.data_dir);
	if (!rc)
		rc = gc_command(db, &c, dry_run, stdout);
	/* hosted registries' abandoned uploads (fcgi/oci/push.h) */
	if (!rc && !dry_run && oci_push_expire(&c, db) > 0)
		printf("removed expired upload sessions\n");
	db_close(db);
	conf_free(&c);
	return rc ? 2 : 0;
}

/* larder token add|list|revoke [-c FILE] ...: fcgi/cmd/token_cmd.h (-c may
 * come anywhere after "token"). */
static int token_main(int argc, char **argv)
{
	const char *path = NULL;
	char *args[64];
	struct conf c;
	int n = 0, rc;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-c") == 0 && i + 1 < argc) {
			path = argv[++i];
		} else if (n < (int)(sizeof(args) / sizeof(args[0]))) {
			args[n++] = argv[i];
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (cmd_load(&c, path))
		return 2;
	if (cmd_become_owner("token", c.data_dir)) {
		conf_free(&c);
		return 2;
	}
	rc = token_cmd(&c, n, args, stdout, stderr);
	conf_free(&c);
	return rc;
}

int main(int argc, char **argv)
{
	struct conf c;
	int rc;

	/* a [policy]'s rules are checked as the config is read */
	policy_conf_hook();
	oci_policy_conf_hook();
	if (argc >= 2 && (strcmp(argv[1], "--version") == 0 ||
			  strcmp(argv[1], "-V") == 0)) {
		printf("larder %s\n", PACKAGE_VERSION);
		return 0;
	}
	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 ||
			  strcmp(argv[1], "-h") == 0)) {
		usage(stdout);
		return 0;
	}
	/* every pool keeps a webhook deliverer beside its workers */
	pool_set_companion(webhook_run);
	if (argc >= 2 && strcmp(argv[1], "serve") == 0)
		return serve_main(argc - 1, argv + 1, dispatch);
	if (argc >= 2 && strcmp(argv[1], "config") == 0)
		return config_cmd(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "fsck") == 0)
		return fsck_cmd(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "gc") == 0)
		return gc_cmd(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "warm") == 0)
		return warm_main(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "token") == 0)
		return token_main(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "policy") == 0)
		return policy_main(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "search") == 0)
		return search_cmd(argc - 1, argv + 1);
	if (argc >= 2 && (strcmp(argv[1], "yank") == 0 ||
			  strcmp(argv[1], "unyank") == 0 ||
			  strcmp(argv[1], "remove") == 0))
		return hosted_cmd(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "webhook") == 0)
		return webhook_cmd(argc - 1, argv + 1);
	if (argc > 1) {
		fprintf(stderr, "larder: unknown command \"%.100s\"\n",
			argv[1]);
		usage(stderr);
		return 2;
	}
	if (fd0_listening()) {
		if (cmd_load(&c, NULL))
			return 1;
		/* Spawned by the web server on a socket of our own: a pool on
		 * it, sized by $LARDER_WORKERS (mod_fcgid runs one process
		 * per request at a time and wants 1) or the config. */
		rc = pool_run(&c, NULL, 0, env_workers(), dispatch);
		conf_free(&c);
		return rc;
	}
	if (getenv("GATEWAY_INTERFACE")) {
		if (cmd_load(&c, NULL)) {
			fputs("Status: 500 Internal Server Error\r\n"
			      "Content-Type: text/plain\r\n\r\n"
			      "larder: bad configuration (see the error log)\n",
			      stdout);
			return 1;
		}
		rc = loop_cgi(&c, dispatch);
		conf_free(&c);
		return rc;
	}
	usage(stderr);
	return 2;
}
