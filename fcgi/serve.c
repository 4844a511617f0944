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
#include "fcgi/serve.h"
#include "fcgi/worker.h"
#include "storage/blob.h"

#define MAX_WORKERS 256

static volatile sig_atomic_t got_term, got_hup, got_chld;

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		got_hup = 1;
	else if (sig == SIGCHLD)
		got_chld = 1;
	else if (sig == SIGTERM || sig == SIGINT)
		got_term = 1;
	/* SIGALRM only wakes the supervisor */
}

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

struct pool {
	pid_t pid[MAX_WORKERS];
	time_t born[MAX_WORKERS];
	long n;
};

static pid_t spawn(const struct conf *c, int fd)
{
	pid_t pid = fork();
	sigset_t none;

	if (pid == 0) {
		signal(SIGCHLD, SIG_DFL);
		signal(SIGALRM, SIG_DFL);
		signal(SIGINT, SIG_IGN);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		_exit(worker_fcgi(c, fd, c->max_requests));
	}
	if (pid < 0)
		log_error(errno, "serve", "fork");
	return pid;
}

static void signal_all(struct pool *p, int sig)
{
	for (long i = 0; i < p->n; i++)
		if (p->pid[i] > 0)
			kill(p->pid[i], sig);
}

/* Reaps dead workers; marks their slots empty. */
static void reap(struct pool *p)
{
	pid_t pid;
	int status;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (long i = 0; i < p->n; i++) {
			if (p->pid[i] != pid)
				continue;
			p->pid[i] = 0;
			if (WIFSIGNALED(status))
				log_warn(0, "serve", "worker %ld killed by "
					 "signal %d", (long)pid,
					 WTERMSIG(status));
		}
	}
}

/* Fills empty slots; a slot whose worker died young waits a second. */
static void fill(struct pool *p, const struct conf *c, int fd)
{
	time_t now = time(NULL);

	for (long i = 0; i < p->n; i++) {
		if (p->pid[i] > 0)
			continue;
		if (p->born[i] && now - p->born[i] < 1)
			continue;
		p->pid[i] = spawn(c, fd);
		p->born[i] = now;
	}
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
	struct conf conf, next;
	struct sigaction sa;
	struct pool pool;
	sigset_t block, old;
	char err[1024];
	long workers = 0;
	int opt, fd;
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
			if (*end || workers < 1 || workers > MAX_WORKERS) {
				fprintf(stderr, "larder serve: --workers %s: "
					"expected 1..%d\n", optarg,
					MAX_WORKERS);
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
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGCHLD, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGCHLD);
	sigprocmask(SIG_BLOCK, &block, &old);

	memset(&pool, 0, sizeof(pool));
	pool.n = workers ? workers : conf.workers;
	if (pool.n > MAX_WORKERS)
		pool.n = MAX_WORKERS;
	log_info("serving on %s with %ld workers, data in %s, config %s",
		 listen_addr, pool.n, conf.data_dir,
		 conf.source ? conf.source : "(built-in defaults)");
	fill(&pool, &conf, fd);
	while (!got_term) {
		sigset_t wait_for = old;

		/* wake on a signal, or each second to refill young slots */
		alarm(1);
		sigsuspend(&wait_for);
		alarm(0);
		if (got_chld) {
			got_chld = 0;
			reap(&pool);
		}
		if (got_hup) {
			got_hup = 0;
			if (conf_load(&next, conf.source ? conf.source :
				      conf_path, err, sizeof(err))) {
				log_error(0, "SIGHUP", "keeping the old "
					  "config: %s", err);
			} else {
				/* each worker has its own copy of the old
				 * one; they finish their request and go */
				conf_free(&conf);
				conf = next;
				log_info("config re-read; replacing workers");
				signal_all(&pool, SIGTERM);
			}
		}
		if (!got_term)
			fill(&pool, &conf, fd);
	}
	log_info("stopping");
	signal_all(&pool, SIGTERM);
	for (int i = 0; i < 100; i++) {
		reap(&pool);
		int alive = 0;

		for (long j = 0; j < pool.n; j++)
			alive += pool.pid[j] > 0;
		if (!alive)
			break;
		usleep(100000);
	}
	signal_all(&pool, SIGKILL);
	reap(&pool);
	close(fd);
	if (strncmp(listen_addr, "unix:", 5) == 0)
		unlink(listen_addr + 5);
	conf_free(&conf);
	return 0;
}
