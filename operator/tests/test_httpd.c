/*
 * test_httpd.c - the metrics/health endpoint on a kernel-chosen port; a
 * probes-only server answers while the metrics server is busy.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <string.h>
#include <curl/curl.h>

#include <tfj/err.h>

#include "app/httpd.h"
#include "tfj_test.h"

static atomic_int ready_flag;
static atomic_int metrics_fail;

static int metrics(void *ud, struct tfj_buf *out)
{
	if (atomic_load(&metrics_fail))
		return TFJ_ETOOBIG;
	return tfj_buf_puts(out, "# TYPE x counter\nx 42\n");
}

static int ready(void *ud)
{
	return atomic_load(&ready_flag);
}

struct body {
	char buf[4096];
	size_t len;
};

static size_t on_body(char *d, size_t s, size_t n, void *ud)
{
	struct body *b = ud;
	size_t k = s * n;
	if (b->len + k >= sizeof(b->buf))
		k = sizeof(b->buf) - b->len - 1;
	memcpy(b->buf + b->len, d, k);
	b->len += k;
	b->buf[b->len] = '\0';
	return s * n;
}

static long req(int port, const char *method, const char *path, struct body *b, char *ctype,
		size_t ctlen)
{
	CURL *h = curl_easy_init();
	char url[128];
	long code = 0;
	char *ct = NULL;
	memset(b, 0, sizeof(*b));
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 5L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
	if (curl_easy_perform(h) == CURLE_OK) {
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
		curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct);
		if (ctype)
			snprintf(ctype, ctlen, "%s", ct ? ct : "");
	}
	curl_easy_cleanup(h);
	return code;
}

static int dump(void *ud, struct tfj_buf *out)
{
	return tfj_buf_puts(out, "tfjobs a/b 7\n");
}

static void test_serve(void)
{
	struct tfj_httpd_opts o = { "127.0.0.1:0", metrics, ready, NULL, dump };
	struct tfj_httpd *h = NULL;
	struct body b;
	char ct[128];
	int port;

	TFJ_CHECK_INT(tfj_httpd_start(&h, &o), 0);
	if (!h)
		return;
	port = tfj_httpd_port(h);
	TFJ_CHECK_GT(port, 0);
	TFJ_CHECK_INT(req(port, "GET", "/healthz", &b, NULL, 0), 200);
	TFJ_CHECK_STR(b.buf, "ok\n");
	TFJ_CHECK_INT(req(port, "GET", "/readyz", &b, NULL, 0), 503);
	atomic_store(&ready_flag, 1);
	TFJ_CHECK_INT(req(port, "GET", "/readyz", &b, NULL, 0), 200);
	TFJ_CHECK_INT(req(port, "GET", "/metrics", &b, ct, sizeof(ct)), 200);
	TFJ_CHECK_STR(b.buf, "# TYPE x counter\nx 42\n");
	TFJ_CHECK(strstr(ct, "text/plain; version=0.0.4") == ct);
	atomic_store(&metrics_fail, 1);
	TFJ_CHECK_INT(req(port, "GET", "/metrics", &b, NULL, 0), 500);
	TFJ_CHECK_INT(req(port, "POST", "/metrics", &b, NULL, 0), 405);
	TFJ_CHECK_INT(req(port, "GET", "/../etc/passwd", &b, NULL, 0), 404);
	TFJ_CHECK_INT(req(port, "GET", "/debug/informers", &b, NULL, 0), 200);
	TFJ_CHECK_STR(b.buf, "tfjobs a/b 7\n");
	tfj_httpd_stop(h);
	TFJ_CHECK_INT(req(port, "GET", "/healthz", &b, NULL, 0), 0); /* gone */
	tfj_httpd_stop(NULL);
}

static int slow_metrics(void *ud, struct tfj_buf *out)
{
	usleep(1500 * 1000);
	return tfj_buf_puts(out, "x 1\n");
}

static void *scrape(void *arg)
{
	struct body b;

	req(*(int *)arg, "GET", "/metrics", &b, NULL, 0);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * The probes on a server of their own (--health-addr): it serves /healthz
 * and /readyz only, and answers at once while the metrics server's thread
 * is busy with a slow scrape (one server thread would make the probe wait
 * the whole 1.5 s).
 */
static void test_probes_apart(void)
{
	struct tfj_httpd_opts om = { "127.0.0.1:0", slow_metrics, ready, NULL, NULL };
	struct tfj_httpd_opts op = { "127.0.0.1:0", NULL, ready, NULL, NULL };
	struct tfj_httpd *m = NULL, *p = NULL;
	pthread_t t;
	struct body b;
	int mport, pport;
	double t0, waited;

	TFJ_CHECK_INT(tfj_httpd_start(&m, &om), 0);
	TFJ_CHECK_INT(tfj_httpd_start(&p, &op), 0);
	if (!m || !p)
		goto out;
	mport = tfj_httpd_port(m);
	pport = tfj_httpd_port(p);
	TFJ_CHECK_INT(req(pport, "GET", "/metrics", &b, NULL, 0), 404);
	TFJ_CHECK_INT(req(pport, "GET", "/debug/informers", &b, NULL, 0), 404);
	TFJ_CHECK_INT(req(mport, "GET", "/debug/informers", &b, NULL, 0), 404);
	atomic_store(&ready_flag, 1);
	TFJ_CHECK_INT(pthread_create(&t, NULL, scrape, &mport), 0);
	usleep(200 * 1000); /* the scrape is being served */
	t0 = now_s();
	TFJ_CHECK_INT(req(pport, "GET", "/healthz", &b, NULL, 0), 200);
	TFJ_CHECK_INT(req(pport, "GET", "/readyz", &b, NULL, 0), 200);
	waited = now_s() - t0;
	/* Well under the scrape's 1.3 s left, even on a slow machine. */
	TFJ_CHECK(waited < 0.8);
	pthread_join(t, NULL);
out:
	tfj_httpd_stop(m);
	tfj_httpd_stop(p);
}

int main(void)
{
	TFJ_RUN(test_serve);
	TFJ_RUN(test_probes_apart);
	return tfj_test_finish();
}
