#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/conf.h"
#include "common/log.h"
#include "fcgi/pool.h"
#include "fcgi/serve.h"
#include "storage/blob.h"


int serve_listen(const char *addr, char *err, size_t errlen)
{
	struct addrinfo hints, *ai = NULL;
	struct sockaddr_un un;
	char host[256];
	const char *colon, *port;
	int fd = -1, one = 1, rc;

	if (strncmp(addr, "unix:", 5) == 0) {
		memset(&un, 0, sizeof(un));
		un.sun_family = AF_UNIX;
		if (strlen(addr + 5) >= sizeof(un.sun_path) || !addr[5]) {
			snprintf(err, errlen, "%s: bad socket path", addr);
			return -1;
		}
		strcpy(un.sun_path, addr + 5);
		unlink(un.sun_path);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || bind(fd, (struct sockaddr *)&un, sizeof(un)) < 0 ||
		    chmod(un.sun_path, 0660) < 0 || listen(fd, 1024) < 0)
			goto sys_fail;
		return fd;
	}
	colon = strrchr(addr, ':');
	if (!colon || colon == addr || (size_t)(colon - addr) >= sizeof(host)) {
		snprintf(err, errlen, "%s: expected HOST:PORT or unix:PATH",
			 addr);
		return -1;
	}
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = '\0';
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	port = colon + 1;
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	rc = getaddrinfo(host, port, &hints, &ai);
	if (rc) {
		snprintf(err, errlen, "%s: %s", addr, gai_strerror(rc));
		return -1;
	}
	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto sys_fail;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 1024) < 0)
		goto sys_fail;
	freeaddrinfo(ai);
	return fd;
sys_fail:
	snprintf(err, errlen, "%s: %s", addr, strerror(errno));
	if (fd >= 0)
		close(fd);
	if (ai)
		freeaddrinfo(ai);
	return -1;
}

static void usage(void)
{
	fprintf(stderr, "usage: larder serve [-c FILE] --listen "
		"HOST:PORT|unix:PATH [--workers N]\n");
}

int serve_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"listen", required_argument, NULL, 'l'},
		{"workers", required_argument, NULL, 'w'},
		{NULL, 0, NULL, 0},
	};
	const char *conf_path = NULL, *listen_addr = NULL;
	struct conf conf;
	char err[1024];
	long workers = 0;
	int opt, fd, rc;
	char *end;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "c:l:w:", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			conf_path = optarg;
			break;
		case 'l':
			listen_addr = optarg;
			break;
		case 'w':
			workers = strtol(optarg, &end, 10);
			if (*end || workers < 1 || workers > POOL_MAX) {
				fprintf(stderr, "larder serve: --workers %s: "
					"expected 1..%d\n", optarg,
					POOL_MAX);
				return 2;
			}
			break;
		default:
			usage();
			return 2;
		}
	}
	if (!listen_addr || optind != argc) {
		usage();
		return 2;
	}
	if (conf_load(&conf, conf_path, err, sizeof(err))) {
		fprintf(stderr, "larder: %s\n", err);
		return 1;
	}
	if (blob_init(conf.data_dir)) {
		conf_free(&conf);
		return 1;
	}
	/* the first worker up sweeps what a previous run left behind */
	snprintf(err, sizeof(err), "%s/tmp/.swept", conf.data_dir);
	unlink(err);
	fd = serve_listen(listen_addr, err, sizeof(err));
	if (fd < 0) {
		fprintf(stderr, "larder serve: %s\n", err);
		conf_free(&conf);
		return 1;
	}
	log_info("serving on %s with %ld to %ld workers, data in %s, config %s",
		 listen_addr, workers ? workers : conf.workers,
		 conf.max_workers, conf.data_dir,
		 conf.source ? conf.source : "(built-in defaults)");
	rc = pool_run(&conf, conf_path, fd, workers);
	close(fd);
	if (strncmp(listen_addr, "unix:", 5) == 0)
		unlink(listen_addr + 5);
	conf_free(&conf);
	return rc;
}
