/*
 * kube.c - Kubernetes API client over libcurl.
 */
#include "kube/kube.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <curl/curl.h>

#include <tfj/clock.h>
#include <tfj/err.h>
#include <tfj/file.h>
#include <tfj/json.h>
#include <tfj/log.h>

#include "kube/ratelimit.h"
#include "kube/retryafter.h"

#define POOL_MAX 16
#define MAX_CODE 600
#define TOKEN_MAX (64u << 10)

struct tfj_kube {
	char *server;
	char *ns;
	char *ca_file, *ca_data, *cert_file, *cert_data, *key_file, *key_data;
	size_t ca_len, cert_len, key_len;
	char *token_file;
	char *user_agent;
	long timeout_ms;
	size_t max_body;
	long token_reload_s;

	pthread_mutex_t tok_mu;
	char *token;             /* current bearer token, or NULL */
	uint64_t token_read_ns;  /* when token_file was last read */

	struct tfj_ratelimit rl;

	pthread_mutex_t pool_mu;
	CURL *pool[POOL_MAX];
	int npool;

	_Atomic uint64_t counts[TFJ_KUBE_NVERBS][MAX_CODE];
	_Atomic uint64_t lat_us[TFJ_KUBE_NVERBS];
	_Atomic uint64_t nreq[TFJ_KUBE_NVERBS];
	_Atomic uint64_t throttled;  /* retries after a 429, or a 503 with Retry-After */
	const _Atomic int64_t *_Atomic fence; /* leader fence (tfj_kube_set_fence), or NULL */
	_Atomic uint64_t fenced;     /* requests refused by the fence */
};

static const char *verb_names[TFJ_KUBE_NVERBS] = {
	"GET", "LIST", "WATCH", "POST", "PUT", "PATCH", "DELETE"
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

const char *tfj_kube_verb_name(enum tfj_kube_verb verb)
{
	return (unsigned)verb < TFJ_KUBE_NVERBS ? verb_names[verb] : "UNKNOWN";
}

int tfj_kube_map_status(long status, const char *reason)
{
	if (status >= 200 && status < 300)
		return 0;
	switch (status) {
	case 0:
		return TFJ_EUNAVAIL;
	case 400:
	case 422:
		return TFJ_EINVAL;
	case 401:
		return TFJ_EAUTH;
	case 403:
		return TFJ_EFORBIDDEN;
	case 404:
		return TFJ_ENOTFOUND;
	case 408:
	case 504:
		return TFJ_ETIMEOUT;
	case 409:
		return reason && strcmp(reason, "AlreadyExists") == 0 ? TFJ_EEXIST : TFJ_ECONFLICT;
	case 410:
		return TFJ_EGONE;
	case 413:
		return TFJ_ETOOBIG;
	case 415:
		return TFJ_EUNSUPP;
	case 429:
		return TFJ_EUNAVAIL;
	default:
		return status >= 500 ? TFJ_EUNAVAIL : TFJ_EIO;
	}
}

int tfj_kube_escape(char *out, size_t outlen, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		int plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~';
		if (o + (plain ? 1 : 3) >= outlen)
			return tfj_err_set(TFJ_ETOOBIG, "escaping a query value");
		if (plain) {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	if (o >= outlen)
		return tfj_err_set(TFJ_ETOOBIG, "escaping a query value");
	out[o] = '\0';
	return 0;
}

static int dup_blob(char **out, const char *src, size_t len)
{
	*out = NULL;
	if (!src)
		return 0;
	*out = malloc(len + 1);
	if (!*out)
		return tfj_err_set(TFJ_ENOMEM, "kube client");
	memcpy(*out, src, len);
	(*out)[len] = '\0';
	return 0;
}

static int dup_s(char **out, const char *s)
{
	return dup_blob(out, s, s ? strlen(s) : 0);
}

/* Reads the token file; keeps the old token if the file cannot be read. */
static void reload_token(struct tfj_kube *k, uint64_t now)
{
	char *t = NULL;
	size_t len;
	int rc;

	if (!k->token_file)
		return;
	/* Trailing whitespace is trimmed by the one rule of file.h. */
	rc = tfj_file_read_secret(&t, &len, k->token_file, TOKEN_MAX);
	k->token_read_ns = now;
	if (rc) {
		tfj_log_warn("cannot read the token file; keeping the previous token",
			     "file", k->token_file, "error", tfj_err_detail());
		return;
	}
	tfj_file_secret_free(k->token);
	k->token = t;
}

int tfj_kube_new(struct tfj_kube **out, const struct tfj_kubeconfig *cfg,
		 const struct tfj_kube_opts *opts)
{
	struct tfj_kube_opts def = { 20, 30, 30000, TFJ_KUBE_MAX_BODY_DEFAULT, 60, NULL };
	struct tfj_kube *k;
	int rc = 0;

	*out = NULL;
	if (!cfg || !cfg->server)
		return tfj_err_set(TFJ_EINVAL, "kube client: no server in the configuration");
	if (!opts)
		opts = &def;
	pthread_once(&curl_once, curl_init_once);
	k = calloc(1, sizeof(*k));
	if (!k)
		return tfj_err_set(TFJ_ENOMEM, "kube client");
	pthread_mutex_init(&k->tok_mu, NULL);
	pthread_mutex_init(&k->pool_mu, NULL);
	tfj_ratelimit_init(&k->rl, opts->qps, opts->burst > 0 ? opts->burst : 1);
	k->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : def.timeout_ms;
	k->max_body = opts->max_body ? opts->max_body : def.max_body;
	k->token_reload_s = opts->token_reload_s > 0 ? opts->token_reload_s : def.token_reload_s;
	if ((rc = dup_s(&k->server, cfg->server)) || (rc = dup_s(&k->ns, cfg->namespace)) ||
	    (rc = dup_s(&k->ca_file, cfg->ca_file)) ||
	    (rc = dup_blob(&k->ca_data, cfg->ca_data, cfg->ca_len)) ||
	    (rc = dup_s(&k->cert_file, cfg->cert_file)) ||
	    (rc = dup_blob(&k->cert_data, cfg->cert_data, cfg->cert_len)) ||
	    (rc = dup_s(&k->key_file, cfg->key_file)) ||
	    (rc = dup_blob(&k->key_data, cfg->key_data, cfg->key_len)) ||
	    (rc = dup_s(&k->token_file, cfg->token_file)) || (rc = dup_s(&k->token, cfg->token)) ||
	    (rc = dup_s(&k->user_agent, opts->user_agent ? opts->user_agent : "tfjob-operator")))
		goto out;
	k->ca_len = cfg->ca_len;
	k->cert_len = cfg->cert_len;
	k->key_len = cfg->key_len;
	if (k->token_file && !k->token) {
		reload_token(k, tfj_clock_mono_ns());
		if (!k->token) {
			rc = tfj_err_set(TFJ_EAUTH, "kube client: cannot read token file %s",
					 k->token_file);
			goto out;
		}
	}
out:
	if (rc) {
		tfj_kube_free(k);
		return rc;
	}
	*out = k;
	return 0;
}

void tfj_kube_free(struct tfj_kube *k)
{
	if (!k)
		return;
	for (int i = 0; i < k->npool; i++)
		curl_easy_cleanup(k->pool[i]);
	if (k->token)
		memset(k->token, 0, strlen(k->token));
	if (k->key_data)
		memset(k->key_data, 0, k->key_len);
	free(k->token);
	free(k->server);
	free(k->ns);
	free(k->ca_file);
	free(k->ca_data);
	free(k->cert_file);
	free(k->cert_data);
	free(k->key_file);
	free(k->key_data);
	free(k->token_file);
	free(k->user_agent);
	tfj_ratelimit_destroy(&k->rl);
	pthread_mutex_destroy(&k->tok_mu);
	pthread_mutex_destroy(&k->pool_mu);
	free(k);
}

const char *tfj_kube_namespace(const struct tfj_kube *k)
{
	return k->ns;
}

static CURL *pool_get(struct tfj_kube *k)
{
	CURL *h = NULL;
	pthread_mutex_lock(&k->pool_mu);
	if (k->npool > 0)
		h = k->pool[--k->npool];
	pthread_mutex_unlock(&k->pool_mu);
	if (!h)
		h = curl_easy_init();
	else
		curl_easy_reset(h); /* options cleared; the connection cache stays */
	return h;
}

static void pool_put(struct tfj_kube *k, CURL *h)
{
	pthread_mutex_lock(&k->pool_mu);
	if (k->npool < POOL_MAX) {
		k->pool[k->npool++] = h;
		h = NULL;
	}
	pthread_mutex_unlock(&k->pool_mu);
	if (h)
		curl_easy_cleanup(h);
}

struct xfer {
	struct tfj_kube *k;
	CURL *h;
	struct tfj_buf *body;        /* non-stream body, or error body of a stream */
	tfj_kube_stream_fn fn;       /* stream consumer, or NULL */
	void *ud;
	int fn_rc;
	int toobig;
	const _Atomic int *cancel;
};

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	size_t n = size * nmemb;
	long code = 0;

	if (x->fn) {
		curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
		if (code >= 200 && code < 300) {
			x->fn_rc = x->fn(x->ud, ptr, n);
			return x->fn_rc ? 0 : n;
		}
	}
	if (tfj_buf_append(x->body, ptr, n) != 0) {
		x->toobig = 1;
		return 0;
	}
	return n;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct xfer *x = ud;
	long code = 0;

	if (x->cancel && atomic_load(x->cancel))
		return 1;
	/* The heartbeat of an open 2xx stream (see tfj_kube_stream). */
	if (x->fn && curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK &&
	    code >= 200 && code < 300)
		(void)x->fn(x->ud, "", 0);
	return 0;
}

/* Builds the Authorization header into hdr; refreshes the token when due. */
static void auth_header(struct tfj_kube *k, char *hdr, size_t hlen, int force_reload)
{
	uint64_t now = tfj_clock_mono_ns();

	hdr[0] = '\0';
	pthread_mutex_lock(&k->tok_mu);
	if (k->token_file &&
	    (force_reload || now - k->token_read_ns > (uint64_t)k->token_reload_s * 1000000000ull))
		reload_token(k, now);
	if (k->token && *k->token)
		snprintf(hdr, hlen, "Authorization: Bearer %s", k->token);
	pthread_mutex_unlock(&k->tok_mu);
}

/*
 * One PEM credential: from memory when data is set (curl copies it), else
 * from file when there is one. type_opt is 0 where curl takes no type.
 */
static CURLcode set_pem(CURL *h, char *data, size_t len, const char *file, CURLoption blob_opt,
			CURLoption type_opt, CURLoption file_opt)
{
	CURLcode c = CURLE_OK;

	if (data) {
		struct curl_blob b = { data, len, CURL_BLOB_COPY };
		c |= curl_easy_setopt(h, blob_opt, &b);
		if (type_opt)
			c |= curl_easy_setopt(h, type_opt, "PEM");
	} else if (file) {
		c |= curl_easy_setopt(h, file_opt, file);
	}
	return c;
}

static int setup_tls(struct tfj_kube *k, CURL *h)
{
	CURLcode c = CURLE_OK;

	c |= curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
	c |= curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
	c |= set_pem(h, k->ca_data, k->ca_len, k->ca_file, CURLOPT_CAINFO_BLOB, 0, CURLOPT_CAINFO);
	c |= set_pem(h, k->cert_data, k->cert_len, k->cert_file, CURLOPT_SSLCERT_BLOB,
		     CURLOPT_SSLCERTTYPE, CURLOPT_SSLCERT);
	c |= set_pem(h, k->key_data, k->key_len, k->key_file, CURLOPT_SSLKEY_BLOB,
		     CURLOPT_SSLKEYTYPE, CURLOPT_SSLKEY);
	return c == CURLE_OK ? 0 : tfj_err_set(TFJ_EINTERNAL, "kube client: TLS options");
}

static int map_curl(CURLcode c, const char *url_path, int toobig, size_t max)
{
	switch (c) {
	case CURLE_OK:
		return 0;
	case CURLE_WRITE_ERROR:
		if (toobig)
			return tfj_err_set(TFJ_ETOOBIG, "%s: response larger than %zu bytes",
					   url_path, max);
		return tfj_err_set(TFJ_ECANCELED, "%s: stream ended by the consumer", url_path);
	case CURLE_ABORTED_BY_CALLBACK:
		return tfj_err_set(TFJ_ECANCELED, "%s: canceled", url_path);
	case CURLE_OPERATION_TIMEDOUT:
		return tfj_err_set(TFJ_ETIMEOUT, "%s: timed out", url_path);
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CONNECT_ERROR:
		return tfj_err_set(TFJ_EAUTH, "%s: TLS failure: %s", url_path, curl_easy_strerror(c));
	default:
		return tfj_err_set(TFJ_EUNAVAIL, "%s: %s", url_path, curl_easy_strerror(c));
	}
}

/* Error detail from a Status body: "<reason>: <message>". */
static int status_error(long status, const struct tfj_buf *body, enum tfj_kube_verb verb,
			const char *path)
{
	cJSON *root = NULL;
	const char *reason = NULL, *msg = NULL;
	int rc;

	if (body && body->len > 0 &&
	    tfj_json_parse(&root, body->ptr, body->len, 1u << 20) == 0) {
		if (tfj_json_opt_string(&reason, root, "reason", NULL) != 0)
			reason = NULL;
		if (tfj_json_opt_string(&msg, root, "message", NULL) != 0)
			msg = NULL;
	}
	rc = tfj_kube_map_status(status, reason);
	tfj_err_set(rc, "%s %s: HTTP %ld %s: %.300s", tfj_kube_verb_name(verb), path, status,
		    reason ? reason : "", msg ? msg : "");
	cJSON_Delete(root);
	return rc;
}

static void rewind_body(struct tfj_buf *resp, size_t mark)
{
	resp->len = mark;
	if (resp->ptr)
		resp->ptr[mark] = '\0';
}

/* How long to wait before retrying a throttled response (-1: no retry). */
static long throttle_wait(CURL *h, long status, int retries)
{
	struct curl_header *hdr = NULL;
	const char *ra = NULL;
	long ms;

	if (status != 429 && status != 503)
		return -1;
	if (curl_easy_header(h, "Retry-After", 0, CURLH_HEADER, -1, &hdr) == CURLHE_OK && hdr)
		ra = hdr->value;
	ms = tfj_retryafter_wait_ms(status, ra, retries, time(NULL));
	/* Up to a fifth more, so callers throttled together do not return together. */
	if (ms > 0)
		ms += (long)(tfj_clock_mono_ns() % (uint64_t)(ms / 5 + 1));
	return ms;
}

/* Sleeps ms, waking every 100 ms to check *cancel; 1 if canceled. */
static int pause_ms(long ms, const _Atomic int *cancel)
{
	while (ms > 0) {
		long step = ms > 100 ? 100 : ms;
		struct timespec ts = { 0, step * 1000000L };

		if (cancel && atomic_load(cancel))
			return 1;
		nanosleep(&ts, NULL);
		ms -= step;
	}
	return cancel && atomic_load(cancel) ? 1 : 0;
}

/* One request as its caller asked for it; the same for every attempt. */
struct req {
	enum tfj_kube_verb verb;
	const char *path;
	const char *ctype;            /* of body; NULL: application/json */
	const char *accept;           /* media types of the answer; NULL: application/json */
	const char *body;             /* NULL: none */
	size_t body_len;
	tfj_kube_stream_fn fn;        /* a watch's consumer, or NULL */
	void *ud;
	const _Atomic int *cancel;    /* may be NULL */
	long max_s;                   /* a watch's longest life */
	long timeout_ms;              /* this attempt's limit (the fence may shorten it) */
};

/*
 * The request headers, or NULL when out of memory. The token is re-read
 * first when it is due or reload_token is set; the copy of the
 * Authorization header on the stack is wiped once curl has its own.
 */
static struct curl_slist *headers(struct tfj_kube *k, const struct req *r, int reload_token)
{
	struct curl_slist *hdrs = NULL;
	char auth[TOKEN_MAX + 32];
	char ct[128], accept[128];

	auth_header(k, auth, sizeof(auth), reload_token);
	snprintf(accept, sizeof(accept), "Accept: %s", r->accept ? r->accept : "application/json");
	hdrs = curl_slist_append(hdrs, accept);
	if (auth[0])
		hdrs = curl_slist_append(hdrs, auth);
	explicit_bzero(auth, sizeof(auth));
	if (r->body) {
		snprintf(ct, sizeof(ct), "Content-Type: %s", r->ctype ? r->ctype : "application/json");
		hdrs = curl_slist_append(hdrs, ct);
	}
	/* Content is small JSON; a 100-continue round trip only adds latency. */
	hdrs = curl_slist_append(hdrs, "Expect:");
	return hdrs;
}

/* Everything but TLS that one attempt sets on its handle. */
static void set_options(struct tfj_kube *k, CURL *h, const struct req *r, const char *url,
			struct curl_slist *hdrs, struct xfer *x)
{
	static const char *methods[TFJ_KUBE_NVERBS] = {
		"GET", "GET", "GET", "POST", "PUT", "PATCH", "DELETE"
	};

	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, k->user_agent);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, methods[r->verb]);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
	if (r->fn) {
		curl_easy_setopt(h, CURLOPT_TIMEOUT, r->max_s > 0 ? r->max_s : 600L);
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
		/* A quiet watch is normal (no events, maybe no bookmarks), so
		 * no low-speed limit: TCP keepalive probes find a dead peer
		 * (about 30 s idle + 9 probes 10 s apart) and max_s bounds
		 * the stream. */
		curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 30L);
		curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 10L);
	} else {
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, r->timeout_ms);
	}
	if (r->body) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, r->body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
	}
}

/*
 * Readies handle h for one attempt: the transfer state x (the response goes
 * to resp), the headers (*hdrs: the caller frees them, also on failure),
 * TLS and the other options.
 */
static int prepare(struct tfj_kube *k, CURL *h, const struct req *r, const char *url,
		   struct tfj_buf *resp, int reload_token, struct xfer *x,
		   struct curl_slist **hdrs)
{
	memset(x, 0, sizeof(*x));
	x->k = k;
	x->h = h;
	x->body = resp;
	x->fn = r->fn;
	x->ud = r->ud;
	x->cancel = r->cancel;
	*hdrs = headers(k, r, reload_token);
	if (!*hdrs)
		return tfj_err_set(TFJ_ENOMEM, "kube: headers");
	if (setup_tls(k, h))
		return TFJ_EINTERNAL;
	set_options(k, h, r, url, *hdrs, x);
	return 0;
}

/* Runs one prepared attempt and counts it; *status gets the HTTP code (0: none). */
static CURLcode attempt(struct tfj_kube *k, CURL *h, enum tfj_kube_verb verb, long *status)
{
	uint64_t t0 = tfj_clock_mono_ns();
	CURLcode c = curl_easy_perform(h);

	*status = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
	atomic_fetch_add(&k->lat_us[verb], (tfj_clock_mono_ns() - t0) / 1000);
	atomic_fetch_add(&k->nreq[verb], 1);
	atomic_fetch_add(&k->counts[verb][*status > 0 && *status < MAX_CODE ? *status : 0], 1);
	return c;
}

/*
 * 1 when the transfer itself decides the request (*rc: the consumer's own
 * error, 0 for a watch's planned end, or the mapped curl failure); 0 when
 * the HTTP status is to be looked at.
 */
static int transfer_ended(int *rc, const struct req *r, CURLcode c, long status,
			  const struct xfer *x, size_t max)
{
	if (r->fn && c == CURLE_WRITE_ERROR && x->fn_rc) {
		*rc = x->fn_rc; /* the consumer's own error, detail already set */
		return 1;
	}
	if (r->fn && c == CURLE_OPERATION_TIMEDOUT && status >= 200 && status < 300) {
		*rc = 0; /* the watch's planned end */
		return 1;
	}
	if (c != CURLE_OK) {
		*rc = map_curl(c, r->path, x->toobig, max);
		return 1;
	}
	return 0;
}

/* Before another attempt: the handle goes back and the response is forgotten. */
static void release_for_retry(struct tfj_kube *k, CURL **h, struct tfj_buf *resp, size_t mark)
{
	rewind_body(resp, mark);
	pool_put(k, *h);
	*h = NULL;
}

/* Counts and logs a throttled response, then waits wait_ms (TFJ_ECANCELED if canceled). */
static int back_off(struct tfj_kube *k, const struct req *r, long status, long wait_ms)
{
	atomic_fetch_add(&k->throttled, 1);
	tfj_log_info("API server asked to retry later", "verb", tfj_kube_verb_name(r->verb),
		     "status", status == 429 ? "429" : "503");
	if (pause_ms(wait_ms, r->cancel))
		return tfj_err_set(TFJ_ECANCELED, "%s: canceled", r->path);
	return 0;
}

/*
 * One request, retried once after a 401 with a re-read token and after
 * throttling (throttle_wait). The response body is appended to resp (NULL:
 * a buffer of our own, dropped) and *status_out (may be NULL) gets the
 * last HTTP code.
 */
long tfj_kube_fence_timeout(long timeout_ms, int64_t deadline_ms, int64_t now_ms)
{
	if (deadline_ms <= 0)
		return timeout_ms;
	if (now_ms >= deadline_ms)
		return 0;
	return deadline_ms - now_ms < timeout_ms ? (long)(deadline_ms - now_ms) : timeout_ms;
}

void tfj_kube_set_fence(struct tfj_kube *k, const _Atomic int64_t *deadline_mono_ms)
{
	atomic_store(&k->fence, deadline_mono_ms);
}

uint64_t tfj_kube_fenced(const struct tfj_kube *k)
{
	return atomic_load(&k->fenced);
}

/*
 * The limit of the next attempt of a plain request: the client's timeout,
 * cut at the fence. 0 when the fence has passed (the request must not go).
 */
static long attempt_timeout(struct tfj_kube *k, const struct req *r)
{
	const _Atomic int64_t *f = atomic_load(&k->fence);
	long t;

	if (r->fn || !f)
		return k->timeout_ms;
	t = tfj_kube_fence_timeout(k->timeout_ms, atomic_load(f),
				   (int64_t)(tfj_clock_mono_ns() / 1000000));
	if (!t)
		atomic_fetch_add(&k->fenced, 1);
	return t;
}

static int perform(struct tfj_kube *k, const struct req *r_in, struct tfj_buf *resp,
		   long *status_out)
{
	struct req rq = *r_in, *r = &rq;
	struct tfj_buf own = TFJ_BUF_INIT(1u << 20);
	struct curl_slist *hdrs = NULL;
	char url[TFJ_KUBE_MAX_PATH + 2100];
	struct xfer x;
	long status = 0, wait_ms;
	int rc = 0, reauth = 0, retries = 0;
	CURL *h = NULL;
	CURLcode c;

	if (status_out)
		*status_out = 0;
	if (!r->path || r->path[0] != '/' || strlen(r->path) > TFJ_KUBE_MAX_PATH)
		return tfj_err_set(TFJ_EINVAL, "kube: bad request path");
	if (r->body_len > TFJ_KUBE_MAX_REQUEST)
		return tfj_err_set(TFJ_ETOOBIG, "kube: request body of %zu bytes over the cap",
				   r->body_len);
	snprintf(url, sizeof(url), "%s%s", k->server, r->path);
	if (!resp) {
		tfj_buf_init(&own, k->max_body);
		resp = &own;
	}

	for (;;) {
		size_t mark = resp->len;

		tfj_ratelimit_wait(&k->rl);
		/* After the rate wait: that wait counts against the fence too. */
		if (!(r->timeout_ms = attempt_timeout(k, r))) {
			rc = tfj_err_set(TFJ_ECANCELED, "%s: not sent, past the leader's renew deadline",
					 r->path);
			goto out;
		}
		h = pool_get(k);
		if (!h) {
			rc = tfj_err_set(TFJ_ENOMEM, "kube: curl handle");
			goto out;
		}
		if ((rc = prepare(k, h, r, url, resp, reauth == 1, &x, &hdrs)))
			goto out;
		c = attempt(k, h, r->verb, &status);
		curl_slist_free_all(hdrs);
		hdrs = NULL;
		if (transfer_ended(&rc, r, c, status, &x, resp->max))
			goto out;
		if (status == 401 && !reauth && k->token_file) {
			/* The token may have rotated: re-read it and try once more. */
			reauth = 1;
			release_for_retry(k, &h, resp, mark);
			continue;
		}
		if (reauth == 1)
			reauth = 2; /* the token is re-read once per request, not per retry */
		wait_ms = throttle_wait(h, status, retries);
		if (wait_ms < 0)
			break;
		retries++;
		release_for_retry(k, &h, resp, mark);
		if ((rc = back_off(k, r, status, wait_ms)))
			goto out;
	}
	if (status < 200 || status >= 300)
		rc = status_error(status, resp, r->verb, r->path);
out:
	if (status_out)
		*status_out = status;
	curl_slist_free_all(hdrs);
	if (h)
		pool_put(k, h);
	tfj_buf_free(&own);
	return rc;
}

int tfj_kube_do(struct tfj_kube *k, enum tfj_kube_verb verb, const char *path,
		const char *content_type, const char *body, size_t body_len,
		struct tfj_buf *resp, long *status)
{
	if ((unsigned)verb >= TFJ_KUBE_NVERBS || verb == TFJ_KUBE_WATCH)
		return tfj_err_set(TFJ_EINVAL, "kube: bad verb");
	return perform(k, &(struct req){ .verb = verb, .path = path, .ctype = content_type,
					 .body = body, .body_len = body_len },
		       resp, status);
}

int tfj_kube_get_as(struct tfj_kube *k, const char *path, const char *accept,
		    struct tfj_buf *resp)
{
	return perform(k, &(struct req){ .verb = TFJ_KUBE_GET, .path = path, .accept = accept },
		       resp, NULL);
}

static int do_json(struct tfj_kube *k, cJSON **out, enum tfj_kube_verb verb, const char *path,
		   const char *ctype, const char *body, size_t len)
{
	struct tfj_buf resp;
	int rc;

	if (out)
		*out = NULL;
	tfj_buf_init(&resp, k->max_body);
	rc = perform(k, &(struct req){ .verb = verb, .path = path, .ctype = ctype, .body = body,
				       .body_len = len },
		     &resp, NULL);
	if (rc == 0 && out) {
		rc = tfj_json_parse(out, tfj_buf_cstr(&resp), resp.len, k->max_body);
		if (rc)
			tfj_err_set(rc, "%s %s: response is not JSON: %s", tfj_kube_verb_name(verb),
				    path, tfj_err_detail());
	}
	tfj_buf_free(&resp);
	return rc;
}

int tfj_kube_get(struct tfj_kube *k, cJSON **out, const char *path)
{
	return do_json(k, out, TFJ_KUBE_GET, path, NULL, NULL, 0);
}

int tfj_kube_list(struct tfj_kube *k, cJSON **out, const char *path)
{
	return do_json(k, out, TFJ_KUBE_LIST, path, NULL, NULL, 0);
}

static int send_obj(struct tfj_kube *k, cJSON **out, enum tfj_kube_verb verb,
		    const char *path, const cJSON *obj)
{
	char *body = NULL;
	int rc;

	if (out)
		*out = NULL;
	rc = tfj_json_print(&body, obj);
	if (rc)
		return rc;
	rc = do_json(k, out, verb, path, "application/json", body, strlen(body));
	free(body);
	return rc;
}

int tfj_kube_create(struct tfj_kube *k, cJSON **out, const char *path, const cJSON *obj)
{
	return send_obj(k, out, TFJ_KUBE_POST, path, obj);
}

int tfj_kube_replace(struct tfj_kube *k, cJSON **out, const char *path, const cJSON *obj)
{
	return send_obj(k, out, TFJ_KUBE_PUT, path, obj);
}

int tfj_kube_patch(struct tfj_kube *k, cJSON **out, const char *path,
		   enum tfj_kube_patch_type type, const char *patch)
{
	static const char *ctypes[] = {
		"application/merge-patch+json",
		"application/strategic-merge-patch+json",
		"application/json-patch+json",
	};
	if ((unsigned)type > TFJ_KUBE_PATCH_JSON || !patch)
		return tfj_err_set(TFJ_EINVAL, "kube: bad patch");
	return do_json(k, out, TFJ_KUBE_PATCH, path, ctypes[type], patch, strlen(patch));
}

int tfj_kube_delete(struct tfj_kube *k, const char *path, const char *uid,
		    const char *propagation)
{
	return tfj_kube_delete_grace(k, path, uid, propagation, -1);
}

int tfj_kube_delete_grace(struct tfj_kube *k, const char *path, const char *uid,
			  const char *propagation, int grace_s)
{
	cJSON *opts = cJSON_CreateObject();
	char *body = NULL;
	int rc;

	if (!opts)
		return tfj_err_set(TFJ_ENOMEM, "kube: delete options");
	if (!cJSON_AddStringToObject(opts, "kind", "DeleteOptions") ||
	    !cJSON_AddStringToObject(opts, "apiVersion", "v1") ||
	    (grace_s >= 0 && !cJSON_AddNumberToObject(opts, "gracePeriodSeconds", grace_s)) ||
	    (propagation && !cJSON_AddStringToObject(opts, "propagationPolicy", propagation))) {
		rc = tfj_err_set(TFJ_ENOMEM, "kube: delete options");
		goto out;
	}
	if (uid) {
		cJSON *pre = cJSON_AddObjectToObject(opts, "preconditions");
		if (!pre || !cJSON_AddStringToObject(pre, "uid", uid)) {
			rc = tfj_err_set(TFJ_ENOMEM, "kube: delete options");
			goto out;
		}
	}
	rc = tfj_json_print(&body, opts);
	if (rc)
		goto out;
	rc = do_json(k, NULL, TFJ_KUBE_DELETE, path, "application/json", body, strlen(body));
out:
	free(body);
	cJSON_Delete(opts);
	return rc;
}

int tfj_kube_stream(struct tfj_kube *k, const char *path, tfj_kube_stream_fn fn, void *ud,
		    const _Atomic int *cancel, long max_s)
{
	struct tfj_buf err;
	int rc;

	if (!fn)
		return tfj_err_set(TFJ_EINVAL, "kube: stream without a consumer");
	/* Only a non-2xx body lands here (a Status object), so it is small. */
	tfj_buf_init(&err, 1u << 20);
	rc = perform(k, &(struct req){ .verb = TFJ_KUBE_WATCH, .path = path, .fn = fn, .ud = ud,
				       .cancel = cancel, .max_s = max_s },
		     &err, NULL);
	tfj_buf_free(&err);
	return rc;
}

uint64_t tfj_kube_count(const struct tfj_kube *k, enum tfj_kube_verb verb, int code)
{
	if ((unsigned)verb >= TFJ_KUBE_NVERBS || code < 0 || code >= MAX_CODE)
		return 0;
	return atomic_load(&((struct tfj_kube *)k)->counts[verb][code]);
}

int tfj_kube_requests_metric(const struct tfj_kube *k, struct tfj_buf *out, const char *name,
			     const char *help)
{
	struct tfj_kube *m = (struct tfj_kube *)k;
	int rc = 0;

	rc |= tfj_buf_printf(out, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
	for (int v = 0; v < TFJ_KUBE_NVERBS; v++)
		for (int c = 0; c < MAX_CODE; c++) {
			uint64_t n = atomic_load(&m->counts[v][c]);
			if (n)
				rc |= tfj_buf_printf(out, "%s{verb=\"%s\",code=\"%d\"} %llu\n",
						     name, verb_names[v], c, (unsigned long long)n);
		}
	return rc ? TFJ_ETOOBIG : 0;
}

int tfj_kube_metrics(const struct tfj_kube *k, struct tfj_buf *out)
{
	struct tfj_kube *m = (struct tfj_kube *)k;
	int rc = 0;

	rc |= tfj_kube_requests_metric(k, out, "tfjob_operator_api_requests_total",
				       "Kubernetes API requests by verb and HTTP code (0: no "
				       "response).");
	rc |= tfj_buf_printf(out, "# HELP tfjob_operator_api_throttled_retries_total Retries "
			     "after a 429, or a 503 with Retry-After.\n"
			     "# TYPE tfjob_operator_api_throttled_retries_total counter\n"
			     "tfjob_operator_api_throttled_retries_total %llu\n",
			     (unsigned long long)atomic_load(&m->throttled));
	rc |= tfj_buf_puts(out, "# HELP tfjob_operator_api_request_seconds Kubernetes API request "
			   "latency by verb.\n"
			   "# TYPE tfjob_operator_api_request_seconds summary\n");
	for (int v = 0; v < TFJ_KUBE_NVERBS; v++) {
		uint64_t n = atomic_load(&m->nreq[v]);
		if (!n)
			continue;
		rc |= tfj_buf_printf(out, "tfjob_operator_api_request_seconds_sum{verb=\"%s\"} %.6f\n"
				     "tfjob_operator_api_request_seconds_count{verb=\"%s\"} %llu\n",
				     verb_names[v], (double)atomic_load(&m->lat_us[v]) / 1e6,
				     verb_names[v], (unsigned long long)n);
	}
	return rc ? TFJ_ETOOBIG : 0;
}
