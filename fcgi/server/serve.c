#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <netdb.h>
#include <pwd.h>
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

#include "common/conf/conf.h"
#include "common/log.h"
#include "fcgi/server/pool.h"
#include "fcgi/server/serve.h"
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

/* The first descriptor systemd passes (sd_listen_fds(3)). */
#define LISTEN_FDS_START 3

/* Socket activation, by hand: when $LISTEN_PID is this process and
 * $LISTEN_FDS is 1, fd 3 is the listening socket systemd made. The
 * variables are removed either way, so that no child sees them. Returns
 * the descriptor, -1 when none was passed, or -2 with a reason in err. */
static int listen_fds(char *err, size_t errlen)
{
	const char *pid_s = getenv("LISTEN_PID");
	const char *fds_s = getenv("LISTEN_FDS");
	int fd = -1, yes = 0, type = 0;
	socklen_t len;
	long pid, n;
	char *end;

	if (!pid_s || !fds_s)
		goto out;
	pid = strtol(pid_s, &end, 10);
	if (*end || pid != (long)getpid())
		goto out; /* meant for another process */
	n = strtol(fds_s, &end, 10);
	if (*end || n != 1) {
		snprintf(err, errlen, "LISTEN_FDS=%s: larder takes exactly one "
			 "socket (one ListenStream= in larder.socket)", fds_s);
		fd = -2;
		goto out;
	}
	len = sizeof(yes);
	if (getsockopt(LISTEN_FDS_START, SOL_SOCKET, SO_ACCEPTCONN, &yes,
		       &len) < 0 || !yes) {
		snprintf(err, errlen, "LISTEN_FDS=1 but fd %d is not a "
			 "listening socket", LISTEN_FDS_START);
		fd = -2;
		goto out;
	}
	len = sizeof(type);
	if (getsockopt(LISTEN_FDS_START, SOL_SOCKET, SO_TYPE, &type,
		       &len) < 0 || type != SOCK_STREAM) {
		snprintf(err, errlen, "fd %d from systemd is not a stream "
			 "socket (ListenStream=)", LISTEN_FDS_START);
		fd = -2;
		goto out;
	}
	fcntl(LISTEN_FDS_START, F_SETFD, FD_CLOEXEC);
	fd = LISTEN_FDS_START;
out:
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	return fd;
}

/* Becomes user (its groups, then its gid, then its uid) and checks that
 * root cannot be had back. sock, when not NULL, is the unix socket just
 * made: it is given to that user first so that it can remove it at the
 * end. Returns 0, or -1 with a reason in err. */
static int drop_privileges(const char *user, const char *sock, char *err,
			   size_t errlen)
{
	struct passwd *pw;

	errno = 0;
	pw = getpwnam(user);
	if (!pw) {
		snprintf(err, errlen, "--user %s: %s", user,
			 errno ? strerror(errno) : "no such user");
		return -1;
	}
	if (geteuid() != 0) {
		if (pw->pw_uid == geteuid())
			return 0;
		snprintf(err, errlen, "--user %s: only root can become another "
			 "user", user);
		return -1;
	}
	if (pw->pw_uid == 0)
		return 0; /* --user root: told to stay root */
	if (sock && chown(sock, pw->pw_uid, pw->pw_gid) < 0) {
		snprintf(err, errlen, "chown %s to %s: %s", sock, user,
			 strerror(errno));
		return -1;
	}
	if (initgroups(user, pw->pw_gid) < 0 || setgid(pw->pw_gid) < 0 ||
	    setuid(pw->pw_uid) < 0) {
		snprintf(err, errlen, "becoming %s: %s", user, strerror(errno));
		return -1;
	}
	if (setuid(0) == 0 || seteuid(0) == 0 || getuid() == 0 ||
	    geteuid() == 0 || getegid() == 0) {
		snprintf(err, errlen, "becoming %s: root could be regained",
			 user);
		return -1;
	}
	return 0;
}

/* Returns 0 when this process may write in those of data_dir and its
 * store directories that exist, or -1 with a reason in err. */
static int check_writable(const char *data_dir, const char *user, char *err,
			  size_t errlen)
{
	static const char *const dirs[] = {"", "/blobs/sha256", "/tmp"};
	char path[4096];

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", data_dir, dirs[i]);
		if (access(path, W_OK | X_OK) == 0 || errno == ENOENT)
			continue; /* blob_init makes what is missing */
		snprintf(err, errlen, "data_dir: %.900s is not writable by "
			 "%s%s (%s); chown -R the data directory to that user",
			 path, user ? "user " : "this process", user ? user : "",
			 strerror(errno));
		return -1;
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: larder serve [-c FILE] [--listen "
		"HOST:PORT|unix:PATH] [--workers N] [--user NAME]\n"
		"Without --listen, the socket systemd passes (LISTEN_FDS).\n"
		"Started as root, --user NAME is required: larder binds, then "
		"becomes NAME\n(--user root to stay root).\n");
}

int serve_main(int argc, char **argv, server_handler *handle)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"listen", required_argument, NULL, 'l'},
		{"workers", required_argument, NULL, 'w'},
		{"user", required_argument, NULL, 'u'},
		{NULL, 0, NULL, 0},
	};
	const char *conf_path = NULL, *listen_addr = NULL, *user = NULL;
	const char *sock = NULL;
	struct conf conf;
	char err[1024];
	long workers = 0;
	int opt, fd, rc;
	char *end;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "c:l:w:u:", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			conf_path = optarg;
			break;
		case 'l':
			listen_addr = optarg;
			break;
		case 'u':
			user = optarg;
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
	if (optind != argc) {
		usage();
		return 2;
	}
	if (geteuid() == 0 && !user) {
		fprintf(stderr, "larder serve: refusing to run as root: give "
			"--user NAME to drop privileges after binding (or "
			"--user root to stay root)\n");
		return 2;
	}
	if (conf_load(&conf, conf_path, err, sizeof(err))) {
		fprintf(stderr, "larder: %s\n", err);
		return 1;
	}
	fd = listen_fds(err, sizeof(err));
	if (fd == -1 && !listen_addr) {
		fprintf(stderr, "larder serve: no --listen, and no socket from "
			"systemd ($LISTEN_FDS)\n");
		usage();
		conf_free(&conf);
		return 2;
	}
	if (fd >= 0 && listen_addr) {
		/* --listen wins; the inherited socket is not ours to serve */
		close(fd);
		fd = -1;
	}
	if (fd == -1) {
		fd = serve_listen(listen_addr, err, sizeof(err));
		if (strncmp(listen_addr, "unix:", 5) == 0)
			sock = listen_addr + 5;
	}
	if (fd < 0) {
		fprintf(stderr, "larder serve: %s\n", err);
		conf_free(&conf);
		return 1;
	}
	rc = 1;
	if (user && drop_privileges(user, sock, err, sizeof(err))) {
		fprintf(stderr, "larder serve: %s\n", err);
		goto out;
	}
	/* before and after making the store's directories: a clear reason
	 * rather than mkdir's when one that is there is not ours */
	if (check_writable(conf.data_dir, user, err, sizeof(err))) {
		fprintf(stderr, "larder serve: %s\n", err);
		goto out;
	}
	/* a log file that cannot be written is refused now, not found out
	 * from a silent log (log_open said why, on standard error) */
	if (log_open(conf.log_file) || blob_init(conf.data_dir))
		goto out;
	if (check_writable(conf.data_dir, user, err, sizeof(err))) {
		fprintf(stderr, "larder serve: %s\n", err);
		goto out;
	}
	/* the first worker up sweeps what a previous run left behind */
	snprintf(err, sizeof(err), "%s/tmp/.swept", conf.data_dir);
	unlink(err);
	log_info("serving on %s with %ld to %ld workers, data in %s, config %s%s%s",
		 listen_addr ? listen_addr : "the socket systemd passed",
		 workers ? workers : conf.workers, conf.max_workers,
		 conf.data_dir,
		 conf.source ? conf.source : "(built-in defaults)",
		 user ? ", as user " : "", user ? user : "");
	rc = pool_run(&conf, conf_path, fd, workers, handle);
out:
	close(fd);
	if (sock)
		unlink(sock);
	conf_free(&conf);
	return rc;
}
