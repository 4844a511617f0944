/* webhook_cmd: larder webhook deliver | test NAME (webhook_cmd.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>

#include "fcgi/cmd/cmd.h"
#include "fcgi/cmd/webhook_cmd.h"
#include "storage/db/db.h"
#include "storage/webhook.h"

static int usage(void)
{
	fputs("usage: larder webhook deliver [-c FILE]\n"
	      "       larder webhook test [-c FILE] NAME\n", stderr);
	return 2;
}

int webhook_cmd(int argc, char **argv)
{
	const char *path = NULL, *sub = NULL, *name = NULL;
	struct db *db = NULL;
	size_t sent = 0, failed = 0;
	char msg[512];
	struct conf c;
	int rc, hook = -1;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-c") == 0 && i + 1 < argc)
			path = argv[++i];
		else if (argv[i][0] != '-' && !sub)
			sub = argv[i];
		else if (argv[i][0] != '-' && sub && !strcmp(sub, "test") &&
		         !name)
			name = argv[i];
		else
			return usage();
	}
	if (!sub || (strcmp(sub, "deliver") && strcmp(sub, "test")) ||
	    (!strcmp(sub, "test") && !name))
		return usage();
	if (cmd_load(&c, path))
		return 2;
	if (name) {
		hook = conf_webhook_find(&c, name);
		if (hook < 0) {
			fprintf(stderr, "larder webhook test: no [webhook "
			        "\"%.100s\"] (config: %s)\n", name,
			        c.source ? c.source : "built-in defaults");
			conf_free(&c);
			return 2;
		}
	}
	rc = cmd_become_owner("webhook", c.data_dir);
	if (!rc && db_open(c.data_dir, &db))
		rc = 2;
	if (rc) {
		conf_free(&c);
		return 2;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (name) {
		rc = webhook_ping(db, &c, hook, msg, sizeof(msg));
		if (rc)
			fprintf(stderr, "larder webhook test: %s: %s\n", name,
			        msg);
		else
			printf("%s: ping delivered to %s\n", name,
			       c.webhook[hook].url);
		rc = rc ? 1 : 0;
	} else {
		rc = webhook_deliver(db, &c, &sent, &failed);
		if (rc == EAGAIN) {
			printf("another deliverer is at work\n");
			rc = 0;
		} else if (rc) {
			fprintf(stderr, "larder webhook deliver: %s\n",
			        strerror(rc));
			rc = 2;
		} else {
			printf("%zu delivered, %zu failed (retried later)\n",
			       sent, failed);
			rc = failed ? 1 : 0;
		}
	}
	db_close(db);
	curl_global_cleanup();
	conf_free(&c);
	return rc;
}
