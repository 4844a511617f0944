#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "fcgi/pypi.h"
#include "fcgi/worker.h"
#include "storage/blob.h"
#include "storage/flight.h"

/* How often some worker looks for what dead fetchers left behind. */
#define SWEEP_INTERVAL 600

static volatile sig_atomic_t stopping;
static volatile sig_atomic_t accepting;

static void on_term(int sig)
{
	(void)sig;
	if (accepting)
		_exit(0);
	stopping = 1;
}

int worker_open(struct worker *w, const struct conf *c, int cgi)
{
	int err;

	memset(w, 0, sizeof(*w));
	w->conf = c;
	w->cgi = cgi;
	worker_fetch_opts(c, -1, &w->fetch);
	err = blob_init(c->data_dir);
	if (!err)
		err = db_open(c->data_dir, &w->db);
	if (!err)
		flight_sweep_due(w->db, c->data_dir, SWEEP_INTERVAL);
	return err;
}

void worker_fetch_opts(const struct conf *c, int idx, struct fetch_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->connect_timeout = c->connect_timeout;
	o->first_byte_timeout = c->first_byte_timeout;
	o->idle_timeout = c->fetch_timeout;
	o->retries = c->fetch_retries;
	o->max_body = (size_t)c->max_page_size;
	if (idx >= 0 && c->index[idx].type == CONF_INDEX_CACHE) {
		o->trust_base = c->index[idx].upstream;
		o->trusted = c->index[idx].trusted_hosts;
	}
}

void worker_close(struct worker *w)
{
	db_close(w->db);
	w->db = NULL;
}

static void redirect(struct worker *w, struct req *r, const char *location)
{
	struct buf url;
	const char *body = "moved\n";

	/* what fits in the web server's header buffer (nginx's
	 * fastcgi_buffer_size is 4 KiB): past that, a clear 414 */
	buf_init(&url, 3072);
	if (req_url(r, w->conf->trust_forwarded, location, &url) ||
	    (*r->query && buf_addf(&url, "?%s", r->query))) {
		buf_free(&url);
		req_error(r, 414, "URL too long");
		return;
	}
	req_header(r, "Location", "%s", buf_str(&url));
	buf_free(&url);
	req_reply(r, 301, "text/plain; charset=utf-8", body, strlen(body));
}

void worker_handle(struct worker *w, struct req *r)
{
	static const char health[] = "ok larder " PACKAGE_VERSION "\n";
	struct route rt;

	if (!*r->path) {
		req_error(r, 400, "bad path encoding");
		return;
	}
	route_parse(w->conf, r->method, r->path, &rt);
	switch (rt.kind) {
	case ROUTE_ERROR:
		if (rt.status == 405)
			req_header(r, "Allow", "GET, HEAD");
		req_error(r, rt.status, rt.reason);
		break;
	case ROUTE_REDIRECT:
		redirect(w, r, rt.location);
		break;
	case ROUTE_HEALTH:
		req_header(r, "Cache-Control", "no-store");
		req_reply(r, 200, "text/plain; charset=utf-8", health,
			  sizeof(health) - 1);
		break;
	case ROUTE_SIMPLE_LIST:
	case ROUTE_SIMPLE_PROJECT:
		pypi_simple(w, r, &rt);
		break;
	case ROUTE_FILE:
		pypi_file(w, r, &rt);
		break;
	}
}

/* Answers one request that req_init prepared (or failed to). */
static void answer(struct worker *w, struct req *r, int init_err)
{
	if (init_err) {
		r->path[0] = '\0';
		req_error(r, init_err == ENAMETOOLONG ? 414 : 400,
			  init_err == ENAMETOOLONG ? "path too long" :
			  "bad path encoding");
	} else {
		worker_handle(w, r);
	}
	req_log(r);
}

int worker_fcgi(const struct conf *c, int listen_fd, long max_requests)
{
	struct sigaction sa;
	struct worker w;
	FCGX_Request fr;
	struct req r;
	long served = 0;
	int err;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	if (worker_open(&w, c, 0))
		return 1;
	FCGX_Init();
	if (FCGX_InitRequest(&fr, listen_fd, 0) != 0) {
		log_error(0, "fastcgi", "cannot set up the request");
		worker_close(&w);
		return 1;
	}
	while (!stopping && (!max_requests || served < max_requests)) {
		accepting = 1;
		if (stopping)
			break;
		err = FCGX_Accept_r(&fr);
		accepting = 0;
		if (err < 0) {
			if (err == -EINTR || errno == EINTR)
				continue;
			log_error(-err, "fastcgi", "accept");
			break;
		}
		err = req_init(&r, &fr);
		answer(&w, &r, err);
		req_finish(&r);
		req_free(&r);
		FCGX_Finish_r(&fr);
		if (++served % 256 == 0)
			flight_sweep_due(w.db, c->data_dir, SWEEP_INTERVAL);
	}
	worker_close(&w);
	return 0;
}

int worker_cgi(const struct conf *c)
{
	struct worker w;
	sigset_t term;
	struct req r;
	int err;

	/* lighttpd's mod_cgi sends SIGTERM as soon as it has the whole
	 * response; finish the log line and the cleanup first. */
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_BLOCK, &term, NULL);
	signal(SIGPIPE, SIG_IGN);
	err = req_init(&r, NULL);
	if (worker_open(&w, c, 1)) {
		req_error(&r, 503, "cannot open the data directory");
		req_log(&r);
		req_free(&r);
		return 1;
	}
	answer(&w, &r, err);
	req_free(&r);
	worker_close(&w);
	return 0;
}
