#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "fcgi/server/loop.h"
#include "fcgi/server/pool.h"

/* An extra worker that has been idle this long goes. */
#define IDLE_RETIRE 30
/* How long stopping workers get to finish before they are killed. */
#define STOP_GRACE_MS 10000

struct pool_slot {
	volatile pid_t pid;      /* 0: empty */
	volatile int busy;
	unsigned gen;            /* the config generation it serves */
	time_t born;             /* a slot whose worker died young waits */
	time_t idle_since;       /* supervisor's view, 0 while busy */
	int retiring;            /* told to retire (SIGUSR2), or retiring on
				  * its own (max_requests): not counted */
};

struct pool_board {
	volatile pid_t supervisor;
	volatile unsigned gen;
	volatile long nslots;    /* slots new workers may take: max_workers */
	volatile long span;      /* slots ever used, >= nslots: a reload
				  * that shrinks the pool leaves old workers
				  * above nslots until they go */
	struct pool_slot slot[POOL_MAX];
};

/* what every worker of this pool answers requests with (pool_run) */
static server_handler *handler;

/* the child beside the workers (pool_set_companion): its pid (0: none
 * running), whether it is done for this config (exit status 0), and
 * when it may be started again */
static pool_companion_fn *companion;
static pid_t companion_pid;
static int companion_done;
static int companion_replaced; /* stopped for a reload: started again */
static time_t companion_after;
static volatile sig_atomic_t companion_stop;

static volatile sig_atomic_t got_term, got_hup, got_chld, got_usr1;

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		got_hup = 1;
	else if (sig == SIGCHLD)
		got_chld = 1;
	else if (sig == SIGUSR1)
		got_usr1 = 1;
	else if (sig == SIGTERM || sig == SIGINT)
		got_term = 1;
	/* SIGALRM and SIGUSR2 (a worker took the last idle place) only
	 * wake the supervisor */
}

void pool_mark(struct pool_board *b, int slot, int busy)
{
	if (!b)
		return;
	__atomic_store_n(&b->slot[slot].busy, busy, __ATOMIC_RELEASE);
	if (!busy)
		return;
	for (long i = 0; i < b->span; i++) {
		const struct pool_slot *s = &b->slot[i];

		if (s->pid && !s->retiring && s->gen == b->gen &&
		    !__atomic_load_n(&s->busy, __ATOMIC_ACQUIRE))
			return;
	}
	/* that was the last idle worker: ask for another */
	kill(b->supervisor, SIGUSR2);
}

void pool_retiring(struct pool_board *b, int slot)
{
	if (!b)
		return;
	__atomic_store_n(&b->slot[slot].retiring, 1, __ATOMIC_RELEASE);
	/* a replacement, now: this one takes no new connection */
	kill(b->supervisor, SIGUSR2);
}

int pool_stale(const struct pool_board *b, int slot)
{
	if (!b)
		return 0;
	/* the supervisor moves gen on before it signals the old workers */
	return b->slot[slot].gen != b->gen;
}

void pool_set_companion(pool_companion_fn *fn)
{
	companion = fn;
}

static void on_companion_term(int sig)
{
	(void)sig;
	companion_stop = 1;
}

/* Starts the companion when there is one and it is not running; it keeps
 * no copy of the listening socket fd. */
static void start_companion(struct pool_board *b, const struct conf *c,
                            int fd)
{
	struct sigaction sa;
	sigset_t none;
	pid_t pid;

	if (!companion || companion_pid || companion_done ||
	    time(NULL) < companion_after)
		return;
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != b->supervisor)
			_exit(0);
		/* never one more holder of the socket the workers accept on */
		close(fd);
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_companion_term;
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGINT, &sa, NULL);
		signal(SIGCHLD, SIG_DFL);
		signal(SIGALRM, SIG_DFL);
		signal(SIGUSR1, SIG_IGN);
		signal(SIGUSR2, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		_exit(companion(c, &companion_stop));
	}
	if (pid < 0) {
		log_error(errno, "pool", "fork");
		companion_after = time(NULL) + 1;
		return;
	}
	companion_pid = pid;
}

static pid_t spawn(struct pool_board *b, long i, const struct conf *c,
		   int fd)
{
	struct pool_slot *s = &b->slot[i];
	pid_t pid;

	s->busy = 0;
	s->retiring = 0;
	s->gen = b->gen;
	s->born = time(NULL);
	s->idle_since = s->born;
	pid = fork();
	if (pid == 0) {
		/* the worker goes when its supervisor does, whoever kills it:
		 * none may keep the listening socket (or a claim) */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != b->supervisor)
			_exit(0);
		/* the supervisor's signals stay blocked, and a SIGTERM sent
		 * now stays pending, until loop_fcgi() has put in the
		 * worker's own handlers: unblocked here, the supervisor's
		 * handler would take it and the worker would never stop */
		signal(SIGCHLD, SIG_DFL);
		signal(SIGALRM, SIG_DFL);
		signal(SIGHUP, SIG_IGN);
		s->pid = getpid();
		_exit(loop_fcgi(c, fd, c->max_requests, b, (int)i, handler));
	}
	if (pid < 0) {
		log_error(errno, "pool", "fork");
		return 0;
	}
	s->pid = pid;
	return pid;
}

/* Reaps dead workers; empties their slots. */
static void reap(struct pool_board *b)
{
	pid_t pid;
	int status;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (pid == companion_pid) {
			companion_pid = 0;
			companion_done = !companion_replaced &&
			                 WIFEXITED(status) &&
			                 WEXITSTATUS(status) == 0;
			companion_after = time(NULL) + 1;
			if (!companion_done && !companion_replaced)
				log_warn(0, "pool", "companion %ld ended (status "
				         "%d); starting it again", (long)pid,
				         status);
			companion_replaced = 0;
			continue;
		}
		for (long i = 0; i < b->span; i++) {
			if (b->slot[i].pid != pid)
				continue;
			b->slot[i].pid = 0;
			b->slot[i].busy = 0;
			if (WIFSIGNALED(status) && WTERMSIG(status) != SIGTERM)
				log_warn(0, "pool", "worker %ld killed by "
					 "signal %d", (long)pid,
					 WTERMSIG(status));
		}
	}
}

struct census {
	long live;   /* current generation, not retiring */
	long idle;   /* of those, not busy */
	long total;  /* every worker still running, old ones included */
};

static struct census count(const struct pool_board *b)
{
	struct census n = {0, 0, 0};

	for (long i = 0; i < b->span; i++) {
		const struct pool_slot *s = &b->slot[i];

		if (!s->pid)
			continue;
		n.total++;
		if (s->retiring || s->gen != b->gen)
			continue;
		n.live++;
		if (!s->busy)
			n.idle++;
	}
	return n;
}

/* An empty slot that may be used now (not one whose worker just died):
 * one of the first nslots, else, while retiring workers still hold
 * theirs (each until the web server lets go of its kept connections),
 * one above. */
static long free_slot(struct pool_board *b, time_t now)
{
	int young = 0;

	for (long i = 0; i < POOL_MAX; i++) {
		/* one whose worker just died waits, and the slots above
		 * with it: a worker that dies young is not replaced in a
		 * loop */
		if (i >= b->nslots && young)
			return -1;
		if (b->slot[i].pid)
			continue;
		if (b->slot[i].born && now - b->slot[i].born < 1) {
			young = 1;
			continue;
		}
		if (i >= b->span)
			b->span = i + 1;
		return i;
	}
	return -1;
}

/* Keeps at least min workers, and one idle while there is room. */
static void fill(struct pool_board *b, const struct conf *c, int fd,
		 long min)
{
	time_t now = time(NULL);
	struct census n = count(b);
	long i;

	while ((n.live < min || (n.idle == 0 && n.live < b->nslots)) &&
	       (i = free_slot(b, now)) >= 0) {
		if (!spawn(b, i, c, fd))
			break;
		n.live++;
		n.idle++;
		n.total++;
	}
}

/* Lets extra workers that have been idle for a while go, keeping min and
 * one idle spare. */
static void trim(struct pool_board *b, long min)
{
	time_t now = time(NULL);
	struct census n = count(b);

	for (long i = 0; i < b->span; i++) {
		struct pool_slot *s = &b->slot[i];

		if (!s->pid || s->retiring || s->gen != b->gen)
			continue;
		if (s->busy) {
			s->idle_since = 0;
			continue;
		}
		if (!s->idle_since)
			s->idle_since = now;
		if (n.live > min && n.idle > 1 &&
		    now - s->idle_since >= IDLE_RETIRE) {
			s->retiring = 1;
			kill(s->pid, SIGUSR2);
			n.live--;
			n.idle--;
		}
	}
}

/* Tells every worker not of generation gen to retire (SIGUSR2: it takes
 * nothing new, lets go at once of its kept connections that wait for
 * their next request, since its config is an old one (pool_stale()),
 * answers what has already arrived on the others, each response ending
 * its connection, and goes once the web server has let go of them all),
 * or, when gen is -1, has every worker stop (SIGTERM: the kept
 * connections go at once). */
static void retire(struct pool_board *b, long gen)
{
	for (long i = 0; i < b->span; i++) {
		struct pool_slot *s = &b->slot[i];

		if (s->pid && (gen < 0 || s->gen != (unsigned)gen)) {
			s->retiring = 1;
			kill(s->pid, gen < 0 ? SIGTERM : SIGUSR2);
		}
	}
}

/* Sizes the pool from c: returns the least number of workers to keep
 * (workers, from the command line, else the config's) and sets the slots
 * new workers may take (max_workers, at least that, at most POOL_MAX). */
static long size_pool(struct pool_board *b, const struct conf *c,
		      long workers)
{
	long min = workers ? workers : c->workers;

	if (min > POOL_MAX)
		min = POOL_MAX;
	b->nslots = c->max_workers > min ? c->max_workers : min;
	if (b->nslots > POOL_MAX)
		b->nslots = POOL_MAX;
	if (b->span < b->nslots)
		b->span = b->nslots;
	return min;
}

/* SIGUSR1: reopens the log file (logrotate moved it) here, and has every
 * worker do the same. */
static void reopen_logs(struct pool_board *b, const struct conf *c)
{
	log_open(c->log_file);
	for (long i = 0; i < b->span; i++)
		if (b->slot[i].pid)
			kill(b->slot[i].pid, SIGUSR1);
}

/* Re-reads the config into c and starts a new generation. Returns 0, or
 * -1 when the file is bad (the old config stays). */
static int reload(struct pool_board *b, struct conf *c,
		  const char *conf_path)
{
	struct conf next;
	char err[1024];

	if (conf_load(&next, c->source ? c->source : conf_path, err,
		      sizeof(err))) {
		log_error(0, "SIGHUP", "keeping the old config: %s", err);
		return -1;
	}
	/* each worker has its own copy of the old one: the new generation
	 * starts, then the old one finishes its requests and goes */
	conf_free(c);
	*c = next;
	b->gen++;
	log_info("config re-read; replacing workers");
	return 0;
}

int pool_run(struct conf *c, const char *conf_path, int listen_fd,
	     long workers, server_handler *handle)
{
	struct pool_board *b;
	struct sigaction sa;
	sigset_t block, old;
	long min;
	int fl;

	handler = handle;
	if (log_open(c->log_file)) /* said why, where the log went so far */
		return 1;
	b = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (b == MAP_FAILED) {
		log_error(errno, "pool", "mmap");
		return 1;
	}
	memset(b, 0, sizeof(*b));
	b->supervisor = getpid();
	min = size_pool(b, c, workers);
	fl = fcntl(listen_fd, F_GETFL);
	if (fl < 0 || fcntl(listen_fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		log_error(errno, "pool", "O_NONBLOCK on the listening socket");
		munmap(b, sizeof(*b));
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGCHLD, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGCHLD);
	sigaddset(&block, SIGUSR2);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &old);

	fill(b, c, listen_fd, min);
	start_companion(b, c, listen_fd);
	while (!got_term) {
		sigset_t wait_for = old;

		/* wake on a signal, or each second to refill and trim */
		alarm(1);
		sigsuspend(&wait_for);
		alarm(0);
		if (got_chld) {
			got_chld = 0;
			reap(b);
		}
		if (got_term)
			break;
		if (got_usr1) {
			got_usr1 = 0;
			reopen_logs(b, c);
		}
		if (got_hup) {
			got_hup = 0;
			if (reload(b, c, conf_path) == 0) {
				log_open(c->log_file);
				min = size_pool(b, c, workers);
				log_info("%ld to %ld workers", min,
					 b->nslots);
				fill(b, c, listen_fd, min);
				retire(b, b->gen);
				/* the companion starts again with the new
				 * config */
				if (companion_pid) {
					kill(companion_pid, SIGTERM);
					companion_replaced = 1;
				}
				companion_done = 0;
			}
		}
		fill(b, c, listen_fd, min);
		trim(b, min);
		start_companion(b, c, listen_fd);
	}
	log_info("stopping");
	retire(b, -1);
	if (companion_pid)
		kill(companion_pid, SIGTERM);
	for (int waited = 0; waited < STOP_GRACE_MS; waited += 50) {
		reap(b);
		if (count(b).total == 0 && !companion_pid)
			break;
		usleep(50000);
	}
	for (long i = 0; i < b->span; i++)
		if (b->slot[i].pid)
			kill(b->slot[i].pid, SIGKILL);
	if (companion_pid)
		kill(companion_pid, SIGKILL);
	reap(b);
	sigprocmask(SIG_SETMASK, &old, NULL);
	munmap(b, sizeof(*b));
	return 0;
}
