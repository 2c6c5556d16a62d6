/*
 * httpd.c - metrics and health endpoint over libmicrohttpd.
 */
#include "app/httpd.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <microhttpd.h>

#include <tfj/err.h>
#include <tfj/parse.h>
#include <tfj/log.h>

#define METRICS_MAX (8u << 20)

struct tfj_httpd {
	struct MHD_Daemon *d;
	struct tfj_httpd_opts o;
	int port;
};

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned code, const char *ctype,
			     char *body, size_t len, int owned)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
		len, body, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!r) {
		if (owned)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", ctype);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	ret = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ret;
}

#define TEXT "text/plain; charset=utf-8"
/* The informer dump: about 100 bytes per cached object. */
#define DUMP_MAX (64u << 20)

/* A body made by fn (metrics or a dump), or 500 when fn fails. */
static enum MHD_Result generated(struct MHD_Connection *conn, tfj_httpd_metrics_fn fn, void *ud,
				 size_t max, const char *ctype)
{
	struct tfj_buf b = TFJ_BUF_INIT(max);
	size_t len;

	if (fn(ud, &b) != 0) {
		tfj_buf_free(&b);
		return reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, TEXT, "generation failed\n", 18, 0);
	}
	len = b.len;
	return reply(conn, MHD_HTTP_OK, ctype, tfj_buf_detach(&b), len, 1);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **con_cls)
{
	struct tfj_httpd *h = cls;

	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, TEXT, "method not allowed\n", 19, 0);
	if (*upload_size) {
		*upload_size = 0; /* a GET with a body: ignore it */
		return MHD_YES;
	}
	if (strcmp(url, "/healthz") == 0 || strcmp(url, "/livez") == 0)
		return reply(conn, MHD_HTTP_OK, TEXT, "ok\n", 3, 0);
	if (strcmp(url, "/readyz") == 0) {
		if (!h->o.ready || h->o.ready(h->o.ud))
			return reply(conn, MHD_HTTP_OK, TEXT, "ok\n", 3, 0);
		return reply(conn, MHD_HTTP_SERVICE_UNAVAILABLE, TEXT, "not ready\n", 10, 0);
	}
	if (strcmp(url, "/metrics") == 0 && h->o.metrics)
		return generated(conn, h->o.metrics, h->o.ud, METRICS_MAX,
				 "text/plain; version=0.0.4; charset=utf-8");
	if (strcmp(url, "/debug/informers") == 0 && h->o.dump)
		return generated(conn, h->o.dump, h->o.ud, DUMP_MAX, TEXT);
	return reply(conn, MHD_HTTP_NOT_FOUND, TEXT, "not found\n", 10, 0);
}

int tfj_httpd_start(struct tfj_httpd **out, const struct tfj_httpd_opts *o)
{
	struct sockaddr_storage ss;
	struct tfj_httpd *h;
	char host[128];
	int port, rc;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
	const union MHD_DaemonInfo *info;

	*out = NULL;
	if ((rc = tfj_parse_hostport(host, sizeof(host), &port, o->addr, TFJ_HOSTPORT_LISTEN,
				     "listen address")))
		return rc;
	memset(&ss, 0, sizeof(ss));
	if (host[0] && strchr(host, ':')) {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		inet_pton(AF_INET6, host, &a6->sin6_addr);
		flags |= MHD_USE_IPv6;
	} else {
		struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		if (host[0])
			inet_pton(AF_INET, host, &a4->sin_addr);
		else
			a4->sin_addr.s_addr = htonl(INADDR_ANY);
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return tfj_err_set(TFJ_ENOMEM, "httpd");
	h->o = *o;
	h->d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handle, h,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)16,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
				MHD_OPTION_END);
	if (!h->d) {
		free(h);
		return tfj_err_set(TFJ_EIO, "httpd: cannot listen on %s", o->addr);
	}
	info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
	h->port = info ? info->port : port;
	*out = h;
	return 0;
}

int tfj_httpd_port(const struct tfj_httpd *h)
{
	return h->port;
}

void tfj_httpd_stop(struct tfj_httpd *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->d);
	free(h);
}
