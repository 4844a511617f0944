#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/chart.h"
#include "common/json.h"
#include "common/log.h"
#include "common/url.h"
#include "fcgi/access/auth.h"
#include "fcgi/admin/status.h"
#include "storage/db/db_outbox.h"
#include "storage/db/db_stats.h"
#include "storage/fsck.h"
#include "storage/health.h"
#include "storage/stats.h"

/* The most an answer here grows to (a few tens of KiB in practice), and
 * how near it one may come: every piece appended is smaller than that, so
 * an answer that ends nearer was cut, and is refused rather than sent. */
#define MAX_BODY (1 << 20)
#define MARGIN   (16 * 1024)
/* Names shown per most-requested list. */
#define TOP_SHOWN 10
/* A prefetched page no client asked for within this many seconds is one
 * the prefetch fetched for nothing. */
#define PREFETCH_UNUSED_AFTER 600

static const char *const kind_name[STATS_NKINDS] = {
    "page", "file", "metadata", "manifest", "blob", "other"};
static const char *const outcome_name[STATS_NOUTCOMES] = {
    "hit", "miss", "stale", "revalidated", "error", "none"};

/* The upstream error counters, in order, and their label. */
static const struct {
	enum stats_counter c;
	const char *name;
} up_errors[] = {
    {STATS_UP_CONNECT, "connect"},   {STATS_UP_TIMEOUT, "timeout"},
    {STATS_UP_HTTP_4XX, "http_4xx"}, {STATS_UP_HTTP_5XX, "http_5xx"},
    {STATS_UP_TOO_BIG, "too_big"},   {STATS_UP_REDIRECT, "redirect"},
    {STATS_UP_PROTOCOL, "protocol"},
};
#define N_UP_ERRORS (sizeof(up_errors) / sizeof(up_errors[0]))

/* Everything the three answers show. */
struct figures {
	struct stats_snapshot s;
	long in_flight;        /* -1: unknown */
	long long store_bytes; /* the blob inventory; -1: unknown */
	long store_blobs;
	long long store_limit; /* max_size, 0: none */
	long prefetch_unused;  /* prefetched pages unasked for 10 minutes on;
	                          -1: unknown */
};

/* Returns the figures (the caller's to free), or NULL when out of memory
 * (r answered). */
static struct figures *gather(struct worker *w, struct req *r)
{
	struct figures *f = calloc(1, sizeof(*f));

	if (!f) {
		req_error(r, 500, "out of memory");
		return NULL;
	}
	stats_read(&f->s);
	if (db_flight_count(w->db, &f->in_flight))
		f->in_flight = -1;
	if (db_blob_totals(w->db, &f->store_bytes, &f->store_blobs))
		f->store_bytes = f->store_blobs = -1;
	f->store_limit = w->conf->max_size;
	if (db_page_prefetch_unused(w->db, (long long)time(NULL) -
					    PREFETCH_UNUSED_AFTER,
				    &f->prefetch_unused))
		f->prefetch_unused = -1;
	return f;
}

static uint64_t hits_of(const struct stats_snapshot *s, int kind)
{
	return s->requests[kind][STATS_HIT] + s->requests[kind][STATS_STALE] +
	       s->requests[kind][STATS_REVALIDATED];
}

static void answer(struct req *r, const char *type, struct buf *b)
{
	if (b->len + MARGIN >= MAX_BODY) {
		req_error(r, 500, "status answer too large");
		return;
	}
	req_header(r, "Cache-Control", "no-store");
	req_reply(r, 200, type, b->data ? b->data : "", b->len);
}

/* Prometheus text: one family's HELP and TYPE. */
static void family(struct buf *b, const char *name, const char *type,
                   const char *help)
{
	buf_addf(b, "# HELP larder_%s %s\n# TYPE larder_%s %s\n", name, help,
	         name, type);
}

static void counter(struct buf *b, const char *name, const char *help,
                    uint64_t v)
{
	family(b, name, "counter", help);
	buf_addf(b, "larder_%s %llu\n", name, (unsigned long long)v);
}

void status_metrics(struct worker *w, struct req *r)
{
	struct figures *f = gather(w, r);
	const struct stats_snapshot *s;
	struct fsck_scrub_state scrub;
	struct buf b;

	if (!f)
		return;
	s = &f->s;
	buf_init(&b, MAX_BODY);
	family(&b, "requests_total", "counter",
	       "Requests answered, by what was asked for (kind) and how the "
	       "cache answered (outcome).");
	for (int k = 0; k < STATS_NKINDS; k++)
		for (int o = 0; o < STATS_NOUTCOMES; o++)
			buf_addf(&b,
			         "larder_requests_total{kind=\"%s\","
			         "outcome=\"%s\"} %llu\n",
			         kind_name[k], outcome_name[o],
			         (unsigned long long)s->requests[k][o]);
	counter(&b, "served_bytes_total",
	        "Body bytes of answers served from the store (hits, stale and "
	        "revalidated answers), including those handed to the web "
	        "server to send.",
	        s->counter[STATS_SERVED_BYTES]);
	counter(&b, "fetched_bytes_total",
	        "Body bytes received from upstreams, retries included.",
	        s->counter[STATS_FETCHED_BYTES]);
	family(&b, "upstream_errors_total", "counter",
	       "Upstream fetches that failed, by what went wrong.");
	for (size_t i = 0; i < N_UP_ERRORS; i++)
		buf_addf(&b, "larder_upstream_errors_total{kind=\"%s\"} %llu\n",
		         up_errors[i].name,
		         (unsigned long long)s->counter[up_errors[i].c]);
	counter(&b, "evicted_blobs_total",
	        "Blobs removed from the store to keep it within its limits.",
	        s->counter[STATS_EVICTED_BLOBS]);
	counter(&b, "evicted_bytes_total", "Bytes of the blobs evicted.",
	        s->counter[STATS_EVICTED_BYTES]);
	counter(&b, "metadata_mismatch_total",
	        "Provisional metadata (from range reads) that the verified "
	        "wheel's own contradicted; the verified one replaced it.",
	        s->counter[STATS_META_MISMATCH]);
	counter(&b, "prefetch_pages_total",
	        "Pages of a wheel's dependencies fetched ahead of the client "
	        "(prefetch_max).", s->counter[STATS_PREFETCH_PAGES]);
	counter(&b, "prefetch_skipped_total",
	        "Dependency pages not prefetched: fresh here already, or no "
	        "prefetch slot free.", s->counter[STATS_PREFETCH_SKIPPED]);
	counter(&b, "prefetch_used_total",
	        "Prefetched pages a client then asked for.",
	        s->counter[STATS_PREFETCH_USED]);
	counter(&b, "prefetch_wheels_total",
	        "Likely wheels of prefetched pages fetched after them "
	        "(prefetch_wheel_size).", s->counter[STATS_PREFETCH_WHEELS]);
	counter(&b, "policy_denied_files_total",
	        "Files a [policy] left out of a page when it was rendered.",
	        s->counter[STATS_POLICY_DENIED]);
	counter(&b, "policy_refused_total",
	        "Requests for a file a [policy] denied, refused (403).",
	        s->counter[STATS_POLICY_REFUSED]);
	counter(&b, "policy_refused_manifests_total",
	        "Manifest requests and pushes a registry's [policy] denied, "
	        "refused (403).", s->counter[STATS_POLICY_MANIFESTS]);
	if (f->prefetch_unused >= 0) {
		family(&b, "prefetch_unused_pages", "gauge",
		       "Prefetched pages no client has asked for in the 10 "
		       "minutes since.");
		buf_addf(&b, "larder_prefetch_unused_pages %ld\n",
		         f->prefetch_unused);
	}
	if (f->in_flight >= 0) {
		family(&b, "fetches_in_flight", "gauge",
		       "Upstream fetches under way (rows of the flights "
		       "table).");
		buf_addf(&b, "larder_fetches_in_flight %ld\n", f->in_flight);
	}
	if (f->store_bytes >= 0) {
		family(&b, "store_bytes", "gauge",
		       "Bytes of the blobs in the store (its inventory).");
		buf_addf(&b, "larder_store_bytes %lld\n", f->store_bytes);
		family(&b, "store_blobs", "gauge", "Blobs in the store.");
		buf_addf(&b, "larder_store_blobs %ld\n", f->store_blobs);
	}
	if (f->store_limit > 0) {
		family(&b, "store_limit_bytes", "gauge",
		       "The most the store may hold (max_size).");
		buf_addf(&b, "larder_store_limit_bytes %lld\n", f->store_limit);
	}
	if (fsck_scrub_read(w->db, &scrub) == 0) {
		counter(&b, "scrub_checked_blobs_total",
		        "Files of the store the scrub (larder fsck --scrub) "
		        "hashed.", (uint64_t)scrub.blobs);
		counter(&b, "scrub_checked_bytes_total",
		        "Bytes the scrub read.", (uint64_t)scrub.bytes);
		counter(&b, "scrub_quarantined_blobs_total",
		        "Bad blobs the scrub moved to quarantine (fetched again "
		        "on the next request).", (uint64_t)scrub.quarantined);
		counter(&b, "scrub_passes_total",
		        "Passes of the scrub over the whole store.",
		        (uint64_t)scrub.passes);
		family(&b, "scrub_last_run_seconds", "gauge",
		       "When the scrub last ran (unix time; 0: never).");
		buf_addf(&b, "larder_scrub_last_run_seconds %lld\n",
		         scrub.last_run);
	}
	family(&b, "stats_start_time_seconds", "gauge",
	       "When the counters started (unix time): they count from "
	       "there, across restarts.");
	buf_addf(&b, "larder_stats_start_time_seconds %lld\n",
	         (long long)s->created);
	answer(r, "text/plain; version=0.0.4; charset=utf-8", &b);
	buf_free(&b);
	free(f);
}

static void json_top(struct buf *b, const struct stats_top_entry *e)
{
	buf_adds(b, "[");
	for (int i = 0; i < STATS_TOP_SLOTS && e[i].name[0]; i++) {
		buf_adds(b, i ? ",{\"name\":" : "{\"name\":");
		json_put_string(b, e[i].name);
		buf_addf(b, ",\"count\":%llu,\"error\":%llu}",
		         (unsigned long long)e[i].count,
		         (unsigned long long)e[i].error);
	}
	buf_adds(b, "]");
}

void status_json(struct worker *w, struct req *r)
{
	struct figures *f = gather(w, r);
	const struct stats_snapshot *s;
	struct buf b;

	if (!f)
		return;
	s = &f->s;
	buf_init(&b, MAX_BODY);
	buf_addf(&b, "{\"version\":\"%s\",\"since\":%lld,\"requests\":{",
	         PACKAGE_VERSION, (long long)s->created);
	for (int k = 0; k < STATS_NKINDS; k++) {
		buf_addf(&b, "%s\"%s\":{", k ? "," : "", kind_name[k]);
		for (int o = 0; o < STATS_NOUTCOMES; o++)
			buf_addf(&b, "%s\"%s\":%llu", o ? "," : "",
			         outcome_name[o],
			         (unsigned long long)s->requests[k][o]);
		buf_adds(&b, "}");
	}
	buf_addf(&b,
	         "},\"served_bytes\":%llu,\"fetched_bytes\":%llu,"
	         "\"upstream_errors\":{",
	         (unsigned long long)s->counter[STATS_SERVED_BYTES],
	         (unsigned long long)s->counter[STATS_FETCHED_BYTES]);
	for (size_t i = 0; i < N_UP_ERRORS; i++)
		buf_addf(&b, "%s\"%s\":%llu", i ? "," : "", up_errors[i].name,
		         (unsigned long long)s->counter[up_errors[i].c]);
	buf_addf(&b,
	         "},\"evicted_blobs\":%llu,\"evicted_bytes\":%llu,"
	         "\"fetches_in_flight\":%ld,\"store\":{\"bytes\":%lld,"
	         "\"blobs\":%ld,\"limit\":%lld},\"top_projects\":",
	         (unsigned long long)s->counter[STATS_EVICTED_BLOBS],
	         (unsigned long long)s->counter[STATS_EVICTED_BYTES],
	         f->in_flight, f->store_bytes, f->store_blobs, f->store_limit);
	json_top(&b, s->top[STATS_TOP_PROJECTS]);
	buf_adds(&b, ",\"top_images\":");
	json_top(&b, s->top[STATS_TOP_IMAGES]);
	buf_adds(&b, ",\"hours\":[");
	for (int i = 0; i < STATS_HOURS; i++)
		buf_addf(&b,
		         "%s{\"start\":%lld,\"requests\":%llu,\"hits\":%llu,"
		         "\"served_bytes\":%llu,\"fetched_bytes\":%llu}",
		         i ? "," : "", (long long)s->hours[i].hour * 3600,
		         (unsigned long long)s->hours[i].requests,
		         (unsigned long long)s->hours[i].hits,
		         (unsigned long long)s->hours[i].served_bytes,
		         (unsigned long long)s->hours[i].fetched_bytes);
	buf_adds(&b, "]}\n");
	answer(r, "application/json", &b);
	buf_free(&b);
	free(f);
}

/* The page. */

static const char style[] =
    "body{font:15px/1.4 system-ui,sans-serif;margin:1.5em auto;"
    "max-width:640px;color:#222;background:#fff}"
    "h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em;"
    "border-bottom:1px solid #ddd}"
    "table{border-collapse:collapse}td,th{padding:2px 10px 2px 0;"
    "text-align:left}td.n,th.n{text-align:right}"
    ".chart .bar,.gauge .bar{fill:#3a7bd5}.gauge .full{fill:#d5533a}"
    ".gauge .track{fill:#eee}.grid{stroke:#ddd}"
    ".axis{font-size:11px;fill:#555}.bad{color:#b00}.ok{color:#070}";

/* One bar per hour of the last 24, or one per day of the last 7, of the
 * hit ratio (saved: 0) or of the bytes served from the store (saved: 1). */
static void history_chart(struct buf *b, const struct stats_snapshot *s,
                          int days, int saved, const char *title)
{
	struct chart_bar bars[24];
	char labels[24][16], tips[24][96], amount[32];
	int n = days ? 7 : 24;

	for (int i = 0; i < n; i++) {
		uint64_t req = 0, hits = 0, bytes = 0;
		int64_t start = 0;
		struct tm tm;
		time_t t;

		/* hours[STATS_HOURS - 1] is this hour, days end today */
		for (int j = 0; j < STATS_HOURS; j++) {
			const struct stats_hour *h = &s->hours[j];
			int64_t now = s->hours[STATS_HOURS - 1].hour;
			int in = days ? h->hour / 24 == now / 24 - (n - 1 - i)
			              : h->hour == now - (n - 1 - i);

			if (!in)
				continue;
			if (!start || h->hour < start)
				start = h->hour;
			req += h->requests;
			hits += h->hits;
			bytes += h->served_bytes;
		}
		t = (time_t)(days ? (start / 24) * 24 : start) * 3600;
		gmtime_r(&t, &tm);
		strftime(labels[i], sizeof(labels[i]), days ? "%a %d" : "%H",
		         &tm);
		if (!days && i % 3 != 0)
			labels[i][0] = '\0';
		chart_bytes(amount, sizeof(amount), (double)bytes);
		if (saved) {
			bars[i].value = (double)bytes;
			snprintf(tips[i], sizeof(tips[i]), "%s from the store",
			         amount);
		} else {
			bars[i].value =
			    req ? 100.0 * (double)hits / (double)req : -1;
			snprintf(tips[i], sizeof(tips[i]),
			         "%llu of %llu requests from the store",
			         (unsigned long long)hits,
			         (unsigned long long)req);
		}
		bars[i].label = labels[i];
		bars[i].tip = tips[i];
	}
	buf_addf(b, "<h3>%s</h3>\n", title);
	chart_bars(b, title, bars, (size_t)n,
	           saved ? CHART_BYTES : CHART_PERCENT);
}

static void top_table(struct buf *b, const char *title,
                      const struct stats_top_entry *e, uint64_t total)
{
	buf_addf(b, "<h3>%s</h3>\n", title);
	if (!e[0].name[0]) {
		buf_adds(b, "<p>None yet.</p>\n");
		return;
	}
	buf_adds(b, "<table><tr><th>name</th><th class=\"n\">requests</th>"
	            "</tr>\n");
	for (int i = 0; i < TOP_SHOWN && e[i].name[0]; i++) {
		buf_adds(b, "<tr><td>");
		buf_add_html(b, e[i].name);
		if (e[i].error)
			buf_addf(b,
			         "</td><td class=\"n\">%llu&#8211;%llu</td>"
			         "</tr>\n",
			         (unsigned long long)(e[i].count - e[i].error),
			         (unsigned long long)e[i].count);
		else
			buf_addf(b, "</td><td class=\"n\">%llu</td></tr>\n",
			         (unsigned long long)e[i].count);
	}
	buf_addf(b,
	         "</table><p>Of %llu requests counted (approximate: a "
	         "range is a name that came in after the list was full).</p>\n",
	         (unsigned long long)total);
}

/* A time of the upstreams table: "2025-01-31 12:00:00Z (5 s ago)", or
 * "never" for 0. */
static void seen_time(struct buf *b, long long t)
{
	time_t tt = (time_t)t;
	char when[32];
	struct tm tm;

	if (t <= 0 || !gmtime_r(&tt, &tm) ||
	    !strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%SZ", &tm)) {
		buf_adds(b, "never");
		return;
	}
	buf_addf(b, "%s (%lld s ago)", when, (long long)time(NULL) - t);
}

/* Appends text, a URL or a reason naming one, with its secrets masked
 * (url_redact) and escaped for HTML. */
static void add_html_shown(struct buf *b, const char *text)
{
	char shown[2048];

	buf_add_html(b, url_redact(text, shown, sizeof(shown)));
}

/* One row of the upstreams table. */
static void upstream_row(struct worker *w, struct buf *b, const char *what,
                         const char *url)
{
	char origin[512], why[1024];
	struct db_seen seen;
	int seen_ok;

	if (url_origin(url, origin, sizeof(origin)))
		snprintf(origin, sizeof(origin), "%s", url);
	buf_adds(b, "<tr><td>");
	buf_add_html(b, what);
	buf_adds(b, "</td><td>");
	add_html_shown(b, origin);
	/* the last attempt, not the breaker: its memory ends after
	 * error_ttl while the host may still be down */
	seen_ok = health_seen(w->db, url, &seen) == 0;
	if (health_state(w->db, url, why, sizeof(why))) {
		buf_adds(b, "</td><td class=\"bad\">failing: ");
		add_html_shown(b, why);
	} else if (seen_ok && seen.last_failed) {
		buf_adds(b, "</td><td class=\"bad\">last attempt failed: ");
		add_html_shown(b, seen.reason);
	} else if (seen_ok) {
		buf_adds(b, "</td><td class=\"ok\">ok");
	} else {
		buf_adds(b, "</td><td>not asked yet");
	}
	buf_adds(b, "</td><td>");
	seen_time(b, seen_ok ? seen.ok_at : 0);
	buf_adds(b, "</td><td>");
	seen_time(b, seen_ok ? seen.failed_at : 0);
	buf_adds(b, "</td></tr>\n");
}

struct failing_ctx {
	struct buf *b;
	int n;
};

static int failing_row(const char *host, long long until, const char *why,
                       void *vctx)
{
	struct failing_ctx *x = vctx;
	long long left = until - (long long)time(NULL);

	if (left <= 0)
		return 0;
	buf_adds(x->b, x->n++ ? "<li>"
	                      : "<p>Hosts remembered as failing:</p>"
	                        "<ul><li>");
	add_html_shown(x->b, host);
	buf_addf(x->b, " (%lld s more): ", left);
	add_html_shown(x->b, why);
	buf_adds(x->b, "</li>\n");
	return 0;
}

struct denied_ctx {
	const struct conf *c;
	struct buf *b;
	int n;
};

static void denied_row(const char *index, const char *filename,
                       const char *why, void *vctx)
{
	struct denied_ctx *x = vctx;
	int i = conf_index_find(x->c, index);

	/* the names of an index that takes a token to read are not for
	 * this anonymous page */
	if (i < 0 || x->c->index[i].read == CONF_READ_TOKEN)
		return;
	buf_adds(x->b, x->n++ ? "<tr><td>" :
	         "<table><tr><th>index</th><th>file</th><th>why</th></tr>\n"
	         "<tr><td>");
	buf_add_html(x->b, index);
	buf_adds(x->b, "</td><td>");
	buf_add_html(x->b, filename);
	buf_adds(x->b, "</td><td>");
	buf_add_html(x->b, why);
	buf_adds(x->b, "</td></tr>\n");
}

/* The policies: what they denied (docs/policy.md). */
/* The registries' policies: which each applies (not those of registries
 * that take a token to read). */
static void registry_policies(struct worker *w, struct buf *b)
{
	int any = 0;

	for (size_t i = 0; i < w->conf->nregistry; i++) {
		const struct conf_registry *g = &w->conf->registry[i];

		if (!g->policies || !*g->policies || g->read == CONF_READ_TOKEN)
			continue;
		if (!any++)
			buf_adds(b, "<h2>Registry policies</h2>\n<table>\n"
			            "<tr><th>registry</th><th>policies</th>"
			            "</tr>\n");
		/* both are names the config check took: no markup */
		buf_addf(b, "<tr><td>%s</td><td>%s</td></tr>\n", g->name,
		         g->policies);
	}
	if (any)
		buf_adds(b, "</table>\n<p>Manifest requests and pushes they "
		            "refused: <code>larder_policy_refused_manifests_total"
		            "</code> in <a href=\"/metrics\">/metrics</a>.</p>\n");
}

static void policies(struct worker *w, struct buf *b)
{
	struct denied_ctx x = {w->conf, b, 0};
	long long total = 0;
	int any = 0;

	for (size_t i = 0; i < w->conf->nindex; i++)
		any |= w->conf->index[i].policies &&
		       *w->conf->index[i].policies;
	if (!any)
		return;
	buf_adds(b, "<h2>Policies</h2>\n");
	if (db_policy_denied(w->db, 20, denied_row, &x, &total)) {
		buf_adds(b, "<p>What the policies denied cannot be read (see "
		            "the log).</p>\n");
		return;
	}
	if (x.n)
		buf_adds(b, "</table>\n");
	buf_addf(b, "<p>%lld files denied in the pages held; %lld OSV "
	            "advisories loaded.</p>\n", total, db_osv_count(w->db));
}

static void upstreams(struct worker *w, struct buf *b)
{
	const struct conf *c = w->conf;
	struct failing_ctx x = {b, 0};
	char what[300];

	buf_adds(b, "<h2>Upstreams</h2>\n<table><tr><th>serves</th>"
	            "<th>upstream</th><th>state</th><th>last answer</th>"
	            "<th>last failure</th></tr>\n");
	for (size_t i = 0; i < c->nindex; i++) {
		if (c->index[i].type != CONF_INDEX_CACHE)
			continue;
		snprintf(what, sizeof(what), "index %s", c->index[i].name);
		upstream_row(w, b, what, c->index[i].upstream);
	}
	for (size_t i = 0; i < c->nregistry; i++) {
		/* a hosted or virtual registry has no upstream of its own */
		if (c->registry[i].type != CONF_REGISTRY_CACHE)
			continue;
		snprintf(what, sizeof(what), "registry %s",
		         c->registry[i].name);
		upstream_row(w, b, what, c->registry[i].upstream);
	}
	buf_adds(b, "</table>\n");
	db_upstream_each(w->db, failing_row, &x);
	if (x.n)
		buf_adds(b, "</ul>\n");
}

static void requests_table(struct buf *b, const struct stats_snapshot *s)
{
	buf_adds(b, "<table><tr><th>kind</th>");
	for (int o = 0; o < STATS_NOUTCOMES; o++)
		buf_addf(b, "<th class=\"n\">%s</th>", outcome_name[o]);
	buf_adds(b, "</tr>\n");
	for (int k = 0; k < STATS_NKINDS; k++) {
		buf_addf(b, "<tr><td>%s</td>", kind_name[k]);
		for (int o = 0; o < STATS_NOUTCOMES; o++)
			buf_addf(b, "<td class=\"n\">%llu</td>",
			         (unsigned long long)s->requests[k][o]);
		buf_adds(b, "</tr>\n");
	}
	buf_adds(b, "</table>\n");
}

static void summary(struct buf *b, const struct figures *f)
{
	const struct stats_snapshot *s = &f->s;
	uint64_t req = 0, hits = 0, errors = 0;
	char served[32], fetched[32], since[64];
	time_t t = (time_t)s->created;
	struct tm tm;

	for (int k = 0; k < STATS_OTHER; k++) {
		for (int o = 0; o < STATS_NOUTCOMES; o++)
			req += s->requests[k][o];
		hits += hits_of(s, k);
	}
	for (size_t i = 0; i < N_UP_ERRORS; i++)
		errors += s->counter[up_errors[i].c];
	chart_bytes(served, sizeof(served),
	            (double)s->counter[STATS_SERVED_BYTES]);
	chart_bytes(fetched, sizeof(fetched),
	            (double)s->counter[STATS_FETCHED_BYTES]);
	gmtime_r(&t, &tm);
	strftime(since, sizeof(since), "%Y-%m-%d %H:%M UTC", &tm);
	buf_addf(b,
	         "<table>"
	         "<tr><td>requests for packages and images</td>"
	         "<td class=\"n\">%llu</td></tr>"
	         "<tr><td>answered from the store</td><td class=\"n\">%.1f %%"
	         "</td></tr>"
	         "<tr><td>bytes saved (served from the store)</td>"
	         "<td class=\"n\">%s</td></tr>"
	         "<tr><td>bytes fetched from upstreams</td>"
	         "<td class=\"n\">%s</td></tr>"
	         "<tr><td>upstream errors</td><td class=\"n\">%llu</td></tr>",
	         (unsigned long long)req,
	         req ? 100.0 * (double)hits / (double)req : 0.0, served,
	         fetched, (unsigned long long)errors);
	if (f->in_flight >= 0)
		buf_addf(b,
		         "<tr><td>fetches in flight</td><td class=\"n\">"
		         "%ld</td></tr>",
		         f->in_flight);
	buf_addf(b, "</table>\n<p>Counted since %s.</p>\n", since);
}

/* Whether outbox row o is of an index or registry that takes a token to
 * read: its names are not for this anonymous page. */
static int hook_row_hidden(struct worker *w, const struct db_outbox *o)
{
	int i;

	if (!o->idx[0]) /* a ping */
		return 0;
	if (!strcmp(o->event, "push")) {
		i = conf_registry_find(w->conf, o->idx, strlen(o->idx));
		return i < 0 || w->conf->registry[i].read == CONF_READ_TOKEN;
	}
	i = conf_index_find(w->conf, o->idx);
	return i < 0 || auth_read_token(w, i);
}

/* The webhooks: how many events wait, and the last tries (the outbox). */
static void webhooks(struct worker *w, struct buf *b)
{
	static const char *const state[] = {"retrying", "delivered",
	                                    "given up"};
	struct db_outbox *rows = NULL;
	long pending = 0, failed = 0;
	size_t n = 0;

	if (!w->conf->nwebhook)
		return;
	buf_adds(b, "<h2>Webhooks</h2>\n");
	if (db_outbox_counts(w->db, &pending, &failed) ||
	    db_outbox_recent(w->db, 20, &rows, &n)) {
		buf_adds(b, "<p>The outbox cannot be read (see the log).</p>\n");
		return;
	}
	buf_addf(b, "<p>%ld events waiting, %ld given up.</p>\n", pending,
	         failed);
	buf_adds(b, "<table><tr><th>webhook</th><th>event</th><th>of</th>"
	            "<th>id</th><th>tried</th><th>tries</th><th>state</th>"
	            "<th>last failure</th></tr>\n");
	for (size_t i = 0; i < n; i++) {
		const struct db_outbox *o = &rows[i];

		if (hook_row_hidden(w, o))
			continue;
		buf_adds(b, "<tr><td>");
		buf_add_html(b, o->hook);
		buf_adds(b, "</td><td>");
		buf_add_html(b, o->event);
		buf_adds(b, "</td><td>");
		buf_add_html(b, o->idx);
		buf_adds(b, " ");
		buf_add_html(b, o->project);
		buf_adds(b, " ");
		buf_add_html(b, o->version);
		buf_addf(b, "</td><td>%s</td><td>", o->uuid);
		seen_time(b, o->done_at);
		buf_addf(b, "</td><td>%ld</td><td>%s</td><td>", o->attempts,
		         o->state >= 0 && o->state <= 2 ? state[o->state] : "?");
		add_html_shown(b, o->error);
		buf_adds(b, "</td></tr>\n");
	}
	buf_adds(b, "</table>\n");
	db_outbox_free(rows, n);
}

void status_page(struct worker *w, struct req *r)
{
	struct figures *f = gather(w, r);
	const struct stats_snapshot *s;
	struct buf b;

	if (!f)
		return;
	s = &f->s;
	buf_init(&b, MAX_BODY);
	buf_addf(&b,
	         "<!DOCTYPE html>\n<html lang=\"en\"><head>"
	         "<meta charset=\"utf-8\"><meta name=\"viewport\" "
	         "content=\"width=device-width\"><title>larder status</title>"
	         "<style>%s</style></head><body>\n<h1>larder %s</h1>\n",
	         style, PACKAGE_VERSION);
	summary(&b, f);
	buf_adds(&b, "<h2>Last day (hours, UTC)</h2>\n");
	history_chart(&b, s, 0, 0, "Hit ratio");
	history_chart(&b, s, 0, 1, "Bytes saved");
	buf_adds(&b, "<h2>Last week (days, UTC)</h2>\n");
	history_chart(&b, s, 1, 0, "Hit ratio");
	history_chart(&b, s, 1, 1, "Bytes saved");
	buf_adds(&b, "<h2>Store</h2>\n");
	if (f->store_bytes >= 0) {
		chart_gauge(&b, (double)f->store_bytes, (double)f->store_limit);
		buf_addf(&b, "<p>%ld blobs.</p>\n", f->store_blobs);
	} else {
		buf_adds(&b, "<p>The store's inventory cannot be read (see the "
		             "log).</p>\n");
	}
	buf_adds(&b, "<h2>Most requested</h2>\n");
	top_table(&b, "Projects", s->top[STATS_TOP_PROJECTS],
	          s->top_total[STATS_TOP_PROJECTS]);
	top_table(&b, "Images", s->top[STATS_TOP_IMAGES],
	          s->top_total[STATS_TOP_IMAGES]);
	upstreams(w, &b);
	webhooks(w, &b);
	policies(w, &b);
	registry_policies(w, &b);
	buf_adds(&b, "<h2>Requests</h2>\n");
	requests_table(&b, s);
	buf_adds(&b, "<p>The same as <a href=\"metrics\">Prometheus text</a> "
	             "and <a href=\"+stats\">JSON</a>.</p>\n</body></html>\n");
	answer(r, "text/html; charset=utf-8", &b);
	buf_free(&b);
	free(f);
}
