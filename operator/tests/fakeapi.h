/*
 * fakeapi.h - a small in-process Kubernetes-style API server for the client,
 * informer and controller tests: real HTTPS (libmicrohttpd + GnuTLS, a CA
 * and server certificate made with the openssl tool at test start), bearer
 * token checks, an object store with resourceVersions, uids, 409/404
 * semantics, uid preconditions on delete, the status subresource, and
 * chunked watch streams (with bookmarks off and 410 after a compaction).
 *
 * It stands in for kube-apiserver where the test bed is not needed to show
 * a behaviour (TLS failures, token rotation, 410 relists, body caps); the
 * itest_*.c programs run the same code against the real API server.
 *
 * Header-only (static) so each test program includes what it uses. Needs
 * `openssl` on PATH; fake_start() returns 77-worthy TFJ_EUNSUPP without it.
 */
#ifndef TFJ_FAKEAPI_H
#define TFJ_FAKEAPI_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <microhttpd.h>
#include <cjson/cJSON.h>

#include <tfj/err.h>
#include <tfj/file.h>

#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "tfj_test.h"
#include "tfj_testutil.h"

#define FAKE_MAX_OBJS 512
#define FAKE_MAX_DOCS 4

struct fake_obj {
	char res[32], ns[64], name[128];
	cJSON *obj;
	int live;
};

struct fake_event {
	long rv;
	char res[32], ns[64];
	char *line;
};

struct fake {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	struct MHD_Daemon *d;
	int port;
	char dir[128];
	char *ca_pem, *wrong_ca_pem, *key_pem, *cert_pem;
	char token[128];
	struct fake_obj objs[FAKE_MAX_OBJS];
	int nobj;
	struct fake_event *ev;
	int nev, capev;
	long rv, compacted, next_uid;
	int generation;     /* bumped to cut every open watch */
	int stopping;
	/* counters */
	int posts[8], deletes, puts, patches, gets, lists, watches, unauthorized;
	int last_delete_grace;     /* gracePeriodSeconds of the last DELETE; -1 = none sent */
	/* fault injection: the next `fail_n` requests whose path contains
	 * fail_path get HTTP fail_status */
	int fail_n, fail_status;
	char fail_path[64];
	char fail_method[8];  /* "" = any method */
	char fail_retry_after[32]; /* Retry-After header of injected failures; "" = none */
	/* documents at fixed paths (issuer discovery): fake_serve_doc */
	char doc_path[FAKE_MAX_DOCS][64];
	char *doc_body[FAKE_MAX_DOCS];
	char doc_type[FAKE_MAX_DOCS][64];
	int doc_gets[FAKE_MAX_DOCS];
	/* A status member a status PUT drops, as the API server prunes a field
	 * its CRD does not declare; "" = none. */
	char prune_status[32];
};

/* A PEM file the test just made; NULL when it cannot be read. */
static inline char *fake_slurp(const char *path)
{
	char *b = NULL;
	size_t n;

	if (tfj_file_read(&b, &n, path, 1u << 20, 0) != 0)
		return NULL;
	return b;
}

static inline int fake_sh(const char *cmd)
{
	return system(cmd) == 0 ? 0 : -1;
}

static inline int fake_make_pki(struct fake *f)
{
	char cmd[2048], p[256];
	if (fake_sh("command -v openssl >/dev/null 2>&1"))
		return TFJ_EUNSUPP;
	if (tfj_testutil_tmpdir(f->dir, sizeof(f->dir), "tfj-fakeapi"))
		return TFJ_EIO;
	snprintf(cmd, sizeof(cmd),
		 "cd %s && "
		 "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
		 "-keyout ca.key -out ca.crt -days 2 -subj /CN=fake-ca >/dev/null 2>&1 && "
		 "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
		 "-keyout wrong.key -out wrong.crt -days 2 -subj /CN=wrong-ca >/dev/null 2>&1 && "
		 "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
		 "-keyout srv.key -out srv.csr -subj /CN=127.0.0.1 >/dev/null 2>&1 && "
		 "printf 'subjectAltName=IP:127.0.0.1\\n' > ext && "
		 "openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
		 "-out srv.crt -days 2 -extfile ext >/dev/null 2>&1",
		 f->dir);
	if (fake_sh(cmd))
		return TFJ_EIO;
	snprintf(p, sizeof(p), "%s/ca.crt", f->dir);
	f->ca_pem = fake_slurp(p);
	snprintf(p, sizeof(p), "%s/wrong.crt", f->dir);
	f->wrong_ca_pem = fake_slurp(p);
	snprintf(p, sizeof(p), "%s/srv.key", f->dir);
	f->key_pem = fake_slurp(p);
	snprintf(p, sizeof(p), "%s/srv.crt", f->dir);
	f->cert_pem = fake_slurp(p);
	return f->ca_pem && f->wrong_ca_pem && f->key_pem && f->cert_pem ? 0 : TFJ_EIO;
}

/* Splits /api/v1/[namespaces/NS/]RES[/NAME[/SUB]] (or /apis/G/V/...). */
static inline int fake_route(const char *url, char *res, char *ns, char *name, char *sub)
{
	char buf[512], *parts[12], *p;
	int n = 0, i;
	res[0] = ns[0] = name[0] = sub[0] = '\0';
	snprintf(buf, sizeof(buf), "%s", url);
	for (p = buf; *p && n < 12;) {
		while (*p == '/')
			*p++ = '\0';
		if (!*p)
			break;
		parts[n++] = p;
		while (*p && *p != '/')
			p++;
	}
	if (n >= 2 && !strcmp(parts[0], "api"))
		i = 2;
	else if (n >= 3 && !strcmp(parts[0], "apis"))
		i = 3;
	else
		return -1;
	if (i + 1 < n && !strcmp(parts[i], "namespaces") && i + 2 < n) {
		snprintf(ns, 64, "%s", parts[i + 1]);
		i += 2;
	}
	if (i >= n)
		return -1;
	snprintf(res, 32, "%s", parts[i]);
	if (i + 1 < n)
		snprintf(name, 128, "%s", parts[i + 1]);
	if (i + 2 < n)
		snprintf(sub, 32, "%s", parts[i + 2]);
	return 0;
}

static inline struct fake_obj *fake_find(struct fake *f, const char *res, const char *ns,
				  const char *name)
{
	for (int i = 0; i < f->nobj; i++)
		if (f->objs[i].live && !strcmp(f->objs[i].res, res) && !strcmp(f->objs[i].ns, ns) &&
		    !strcmp(f->objs[i].name, name))
			return &f->objs[i];
	return NULL;
}

static inline void fake_set_rv(cJSON *obj, long rv)
{
	cJSON *m = cJSON_GetObjectItem(obj, "metadata");
	char s[32];
	snprintf(s, sizeof(s), "%ld", rv);
	cJSON_DeleteItemFromObject(m, "resourceVersion");
	cJSON_AddStringToObject(m, "resourceVersion", s);
}

/* Records a watch event (lock held). */
static inline void fake_emit(struct fake *f, const char *type, const char *res, const char *ns,
		      const cJSON *obj)
{
	cJSON *e = cJSON_CreateObject();
	if (f->nev == f->capev) {
		f->capev = f->capev ? f->capev * 2 : 64;
		f->ev = realloc(f->ev, (size_t)f->capev * sizeof(*f->ev));
	}
	cJSON_AddStringToObject(e, "type", type);
	cJSON_AddItemToObject(e, "object", cJSON_Duplicate(obj, 1));
	f->ev[f->nev].rv = f->rv;
	snprintf(f->ev[f->nev].res, sizeof(f->ev[f->nev].res), "%s", res);
	snprintf(f->ev[f->nev].ns, sizeof(f->ev[f->nev].ns), "%s", ns);
	f->ev[f->nev].line = cJSON_PrintUnformatted(e);
	f->nev++;
	cJSON_Delete(e);
	pthread_cond_broadcast(&f->cond);
}

/* Stores a new object (lock held); returns its slot or NULL on 409. */
static inline struct fake_obj *fake_create_locked(struct fake *f, const char *res, const char *ns,
					   cJSON *obj)
{
	cJSON *m = cJSON_GetObjectItem(obj, "metadata");
	const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(m, "name"));
	const char *gen = cJSON_GetStringValue(cJSON_GetObjectItem(m, "generateName"));
	struct fake_obj *o;
	char uid[32];
	if (!name && gen && strlen(gen) < 200) {
		/* As the API server: the prefix and 5 characters of its own. */
		char nm[256];
		snprintf(nm, sizeof(nm), "%sz%04ld", gen, (f->next_uid + 1) % 10000);
		cJSON_AddStringToObject(m, "name", nm);
		name = cJSON_GetStringValue(cJSON_GetObjectItem(m, "name"));
	}
	if (!m || !name || fake_find(f, res, ns, name) || f->nobj >= FAKE_MAX_OBJS)
		return NULL;
	o = &f->objs[f->nobj++];
	memset(o, 0, sizeof(*o));
	snprintf(o->res, sizeof(o->res), "%s", res);
	snprintf(o->ns, sizeof(o->ns), "%s", ns);
	snprintf(o->name, sizeof(o->name), "%s", name);
	snprintf(uid, sizeof(uid), "uid-%ld", ++f->next_uid);
	cJSON_DeleteItemFromObject(m, "uid");
	cJSON_AddStringToObject(m, "uid", uid);
	if (ns[0] && !cJSON_GetObjectItem(m, "namespace"))
		cJSON_AddStringToObject(m, "namespace", ns);
	f->rv++;
	fake_set_rv(obj, f->rv);
	o->obj = obj;
	o->live = 1;
	fake_emit(f, "ADDED", res, ns, obj);
	return o;
}

static inline int fake_label_ok(const cJSON *obj, const char *sel)
{
	const cJSON *l;
	if (!sel || !*sel)
		return 1;
	l = cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "metadata"), "labels");
	return cJSON_GetObjectItem(l, sel) != NULL; /* "exists" selectors only */
}

static inline enum MHD_Result fake_reply(struct MHD_Connection *c, int code, const char *body)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body,
								 MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;
	MHD_add_response_header(r, "Content-Type", "application/json");
	ret = MHD_queue_response(c, (unsigned)code, r);
	MHD_destroy_response(r);
	return ret;
}

/* A Status reply with a Retry-After header (throttling). */
static inline enum MHD_Result fake_status_ra(struct MHD_Connection *c, int code,
					     const char *reason, const char *msg,
					     const char *retry_after)
{
	char b[512];
	struct MHD_Response *r;
	enum MHD_Result ret;

	snprintf(b, sizeof(b), "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
		 "\"message\":\"%s\",\"reason\":\"%s\",\"code\":%d}", msg, reason, code);
	r = MHD_create_response_from_buffer(strlen(b), (void *)b, MHD_RESPMEM_MUST_COPY);
	MHD_add_response_header(r, "Content-Type", "application/json");
	MHD_add_response_header(r, "Retry-After", retry_after);
	ret = MHD_queue_response(c, (unsigned)code, r);
	MHD_destroy_response(r);
	return ret;
}

static inline enum MHD_Result fake_status(struct MHD_Connection *c, int code, const char *reason,
				   const char *msg)
{
	char b[512];
	snprintf(b, sizeof(b), "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
		 "\"message\":\"%s\",\"reason\":\"%s\",\"code\":%d}", msg, reason, code);
	return fake_reply(c, code, b);
}

static inline enum MHD_Result fake_obj_reply(struct MHD_Connection *c, int code, const cJSON *o)
{
	char *s = cJSON_PrintUnformatted(o);
	enum MHD_Result r = fake_reply(c, code, s);
	free(s);
	return r;
}

/* Records a change of o (next resourceVersion, a MODIFIED watch event) and
 * answers with it; releases f->mu, which the caller holds. */
static inline enum MHD_Result fake_modified(struct fake *f, struct MHD_Connection *c, const char *res,
				     const char *ns, struct fake_obj *o)
{
	enum MHD_Result ret;

	f->rv++;
	fake_set_rv(o->obj, f->rv);
	fake_emit(f, "MODIFIED", res, ns, o->obj);
	ret = fake_obj_reply(c, 200, o->obj);
	pthread_mutex_unlock(&f->mu);
	return ret;
}


struct fake_watch {
	struct fake *f;
	char res[32], ns[64], sel[128];
	long rv;
	int next;          /* index into f->ev */
	int gen;
	time_t until;
	char *pending;     /* rest of a line not yet written */
	size_t plen, poff;
	int ended;
};

static inline ssize_t fake_watch_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct fake_watch *w = cls;
	struct fake *f = w->f;
	size_t n;

	for (;;) {
		if (w->pending) {
			n = w->plen - w->poff < max ? w->plen - w->poff : max;
			memcpy(buf, w->pending + w->poff, n);
			w->poff += n;
			if (w->poff == w->plen) {
				free(w->pending);
				w->pending = NULL;
			}
			return (ssize_t)n;
		}
		if (w->ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		pthread_mutex_lock(&f->mu);
		while (!f->stopping && f->generation == w->gen && time(NULL) < w->until) {
			int found = 0;
			for (; w->next < f->nev; w->next++) {
				struct fake_event *e = &f->ev[w->next];
				cJSON *ev;
				if (e->rv <= w->rv || strcmp(e->res, w->res) ||
				    (w->ns[0] && strcmp(e->ns, w->ns)))
					continue;
				ev = cJSON_Parse(e->line);
				if (!fake_label_ok(cJSON_GetObjectItem(ev, "object"), w->sel)) {
					cJSON_Delete(ev);
					continue;
				}
				cJSON_Delete(ev);
				w->plen = strlen(e->line) + 1;
				w->pending = malloc(w->plen + 1);
				memcpy(w->pending, e->line, w->plen - 1);
				w->pending[w->plen - 1] = '\n';
				w->poff = 0;
				w->next++;
				found = 1;
				break;
			}
			if (found)
				break;
			{
				struct timespec ts;
				clock_gettime(CLOCK_REALTIME, &ts);
				ts.tv_nsec += 100000000L;
				if (ts.tv_nsec >= 1000000000L) {
					ts.tv_sec++;
					ts.tv_nsec -= 1000000000L;
				}
				pthread_cond_timedwait(&f->cond, &f->mu, &ts);
			}
		}
		if (!w->pending) {
			/* A cut by generation is an abrupt close, as a dying server's. */
			int cut = f->generation != w->gen || f->stopping;
			pthread_mutex_unlock(&f->mu);
			return cut ? MHD_CONTENT_READER_END_WITH_ERROR
				   : MHD_CONTENT_READER_END_OF_STREAM;
		}
		pthread_mutex_unlock(&f->mu);
	}
}

static inline void fake_watch_free(void *cls)
{
	struct fake_watch *w = cls;
	free(w->pending);
	free(w);
}

struct fake_req {
	char *body;
	size_t len;
};

static inline enum MHD_Result fake_handle(void *cls, struct MHD_Connection *c, const char *url,
				   const char *method, const char *version, const char *upload,
				   size_t *upload_size, void **con_cls)
{
	struct fake *f = cls;
	struct fake_req *rq = *con_cls;
	char res[32], ns[64], name[128], sub[32], want[160];
	const char *auth, *q;
	enum MHD_Result ret;

	if (!rq) {
		rq = calloc(1, sizeof(*rq));
		*con_cls = rq;
		return MHD_YES;
	}
	if (*upload_size) {
		rq->body = realloc(rq->body, rq->len + *upload_size + 1);
		memcpy(rq->body + rq->len, upload, *upload_size);
		rq->len += *upload_size;
		rq->body[rq->len] = '\0';
		*upload_size = 0;
		return MHD_YES;
	}
	auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	snprintf(want, sizeof(want), "Bearer %s", f->token);
	pthread_mutex_lock(&f->mu);
	if (f->token[0] && (!auth || strcmp(auth, want) != 0)) {
		f->unauthorized++;
		pthread_mutex_unlock(&f->mu);
		return fake_status(c, 401, "Unauthorized", "Unauthorized");
	}
	if (f->fail_n > 0 && strstr(url, f->fail_path) &&
	    (!f->fail_method[0] || !strcmp(method, f->fail_method))) {
		int code = f->fail_status;
		char ra[32];
		f->fail_n--;
		snprintf(ra, sizeof(ra), "%s", f->fail_retry_after);
		pthread_mutex_unlock(&f->mu);
		if (ra[0])
			return fake_status_ra(c, code, "TooManyRequests", "injected", ra);
		return fake_status(c, code, code == 410 ? "Expired" : "InternalError", "injected");
	}
	for (int d = 0; d < FAKE_MAX_DOCS; d++)
		if (f->doc_body[d] && !strcmp(url, f->doc_path[d]) && !strcmp(method, "GET")) {
			const char *acc = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");

			f->doc_gets[d]++;
			/* As kube-apiserver: a document only in the media types it has. */
			if (acc && !strstr(acc, f->doc_type[d]) && !strstr(acc, "*/*"))
				ret = fake_status(c, 406, "NotAcceptable", f->doc_type[d]);
			else
				ret = fake_reply(c, 200, f->doc_body[d]);
			pthread_mutex_unlock(&f->mu);
			return ret;
		}
	if (fake_route(url, res, ns, name, sub)) {
		pthread_mutex_unlock(&f->mu);
		return fake_status(c, 404, "NotFound", "no route");
	}
	if (!strcmp(method, "GET") && !name[0]) {
		const char *sel = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "labelSelector");
		q = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "watch");
		if (q && !strcmp(q, "1")) {
			struct fake_watch *w = calloc(1, sizeof(*w));
			struct MHD_Response *r;
			const char *rvs = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND,
								      "resourceVersion");
			const char *to = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND,
								     "timeoutSeconds");
			w->f = f;
			snprintf(w->res, sizeof(w->res), "%s", res);
			snprintf(w->ns, sizeof(w->ns), "%s", ns);
			snprintf(w->sel, sizeof(w->sel), "%s", sel ? sel : "");
			w->rv = rvs ? strtol(rvs, NULL, 10) : 0;
			w->gen = f->generation;
			w->until = time(NULL) + (to ? strtol(to, NULL, 10) : 30);
			f->watches++;
			if (w->rv < f->compacted) {
				pthread_mutex_unlock(&f->mu);
				free(w);
				/* The real server sends 200 and an ERROR event here. */
				return fake_reply(c, 200, "{\"type\":\"ERROR\",\"object\":{\"kind\":"
						  "\"Status\",\"code\":410,\"reason\":\"Expired\"}}\n");
			}
			pthread_mutex_unlock(&f->mu);
			r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, fake_watch_read,
							      w, fake_watch_free);
			MHD_add_response_header(r, "Content-Type", "application/json");
			ret = MHD_queue_response(c, 200, r);
			MHD_destroy_response(r);
			return ret;
		}
		{
			cJSON *list = cJSON_CreateObject(), *items, *m;
			char rvs[32];
			f->lists++;
			m = cJSON_AddObjectToObject(list, "metadata");
			snprintf(rvs, sizeof(rvs), "%ld", f->rv);
			cJSON_AddStringToObject(m, "resourceVersion", rvs);
			items = cJSON_AddArrayToObject(list, "items");
			for (int i = 0; i < f->nobj; i++)
				if (f->objs[i].live && !strcmp(f->objs[i].res, res) &&
				    (!ns[0] || !strcmp(f->objs[i].ns, ns)) &&
				    fake_label_ok(f->objs[i].obj, sel))
					cJSON_AddItemToArray(items, cJSON_Duplicate(f->objs[i].obj, 1));
			pthread_mutex_unlock(&f->mu);
			ret = fake_obj_reply(c, 200, list);
			cJSON_Delete(list);
			return ret;
		}
	}
	if (!strcmp(method, "GET")) {
		struct fake_obj *o = fake_find(f, res, ns, name);
		f->gets++;
		ret = o ? fake_obj_reply(c, 200, o->obj) : fake_status(c, 404, "NotFound", "not found");
		pthread_mutex_unlock(&f->mu);
		return ret;
	}
	if (!strcmp(method, "POST")) {
		cJSON *obj = rq->body ? cJSON_Parse(rq->body) : NULL;
		struct fake_obj *o;
		if (!obj) {
			pthread_mutex_unlock(&f->mu);
			return fake_status(c, 400, "BadRequest", "bad body");
		}
		if (!strcmp(res, "pods"))
			f->posts[0]++;
		else if (!strcmp(res, "services"))
			f->posts[1]++;
		else if (!strcmp(res, "events"))
			f->posts[2]++;
		else
			f->posts[3]++;
		o = fake_create_locked(f, res, ns, obj);
		if (!o) {
			cJSON_Delete(obj);
			pthread_mutex_unlock(&f->mu);
			return fake_status(c, 409, "AlreadyExists", "already exists");
		}
		ret = fake_obj_reply(c, 201, o->obj);
		pthread_mutex_unlock(&f->mu);
		return ret;
	}
	if (!strcmp(method, "PUT")) {
		cJSON *obj = rq->body ? cJSON_Parse(rq->body) : NULL;
		struct fake_obj *o = fake_find(f, res, ns, name);
		const char *rv = cJSON_GetStringValue(
			cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "metadata"), "resourceVersion"));
		const char *cur = o ? cJSON_GetStringValue(cJSON_GetObjectItem(
					      cJSON_GetObjectItem(o->obj, "metadata"), "resourceVersion"))
				    : NULL;
		f->puts++;
		if (!obj || !o) {
			cJSON_Delete(obj);
			pthread_mutex_unlock(&f->mu);
			return fake_status(c, o ? 400 : 404, o ? "BadRequest" : "NotFound", "put");
		}
		if (rv && cur && strcmp(rv, cur)) {
			cJSON_Delete(obj);
			pthread_mutex_unlock(&f->mu);
			return fake_status(c, 409, "Conflict", "the object has been modified");
		}
		if (!strcmp(sub, "status")) {
			cJSON *st = cJSON_DetachItemFromObject(obj, "status");
			if (st && f->prune_status[0])
				cJSON_DeleteItemFromObject(st, f->prune_status);
			cJSON_Delete(obj);
			cJSON_DeleteItemFromObject(o->obj, "status");
			if (st)
				cJSON_AddItemToObject(o->obj, "status", st);
		} else {
			cJSON *m = cJSON_GetObjectItem(o->obj, "metadata");
			cJSON *om = cJSON_GetObjectItem(obj, "metadata");
			cJSON_DeleteItemFromObject(om, "uid");
			cJSON_AddStringToObject(om, "uid",
						cJSON_GetStringValue(cJSON_GetObjectItem(m, "uid")));
			cJSON_Delete(o->obj);
			o->obj = obj;
		}
		return fake_modified(f, c, res, ns, o);
	}
	if (!strcmp(method, "PATCH")) {
		/* A JSON merge patch of the top-level fields (all the tests need). */
		cJSON *p = rq->body ? cJSON_Parse(rq->body) : NULL, *it;
		struct fake_obj *o = fake_find(f, res, ns, name);
		f->patches++;
		if (!p || !o) {
			cJSON_Delete(p);
			pthread_mutex_unlock(&f->mu);
			return fake_status(c, o ? 400 : 404, o ? "BadRequest" : "NotFound", "patch");
		}
		cJSON_ArrayForEach(it, p) {
			cJSON_DeleteItemFromObject(o->obj, it->string);
			if (!cJSON_IsNull(it))
				cJSON_AddItemToObject(o->obj, it->string, cJSON_Duplicate(it, 1));
		}
		cJSON_Delete(p);
		return fake_modified(f, c, res, ns, o);
	}
	if (!strcmp(method, "DELETE")) {
		struct fake_obj *o = fake_find(f, res, ns, name);
		cJSON *opts = rq->body ? cJSON_Parse(rq->body) : NULL;
		const char *uid = cJSON_GetStringValue(
			cJSON_GetObjectItem(cJSON_GetObjectItem(opts, "preconditions"), "uid"));
		f->deletes++;
		f->last_delete_grace = cJSON_IsNumber(cJSON_GetObjectItem(opts, "gracePeriodSeconds"))
			? cJSON_GetObjectItem(opts, "gracePeriodSeconds")->valueint : -1;
		if (!o) {
			cJSON_Delete(opts);
			pthread_mutex_unlock(&f->mu);
			return fake_status(c, 404, "NotFound", "not found");
		}
		if (uid && strcmp(uid, cJSON_GetStringValue(cJSON_GetObjectItem(
					       cJSON_GetObjectItem(o->obj, "metadata"), "uid")))) {
			cJSON_Delete(opts);
			pthread_mutex_unlock(&f->mu);
			return fake_status(c, 409, "Conflict", "Precondition failed: UID in precondition");
		}
		cJSON_Delete(opts);
		f->rv++;
		fake_set_rv(o->obj, f->rv);
		o->live = 0;
		fake_emit(f, "DELETED", res, ns, o->obj);
		ret = fake_obj_reply(c, 200, o->obj);
		cJSON_Delete(o->obj);
		o->obj = NULL;
		pthread_mutex_unlock(&f->mu);
		return ret;
	}
	pthread_mutex_unlock(&f->mu);
	return fake_status(c, 405, "MethodNotAllowed", "method");
}

static inline void fake_done(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct fake_req *rq = *con_cls;
	if (rq) {
		free(rq->body);
		free(rq);
	}
	*con_cls = NULL;
}

/*
 * The next n requests whose path contains `path` (and whose method is
 * `method`; NULL = any) get HTTP `status`, with a Retry-After header when
 * retry_after is not NULL. n = 0 turns injection off.
 */
static inline void fake_inject(struct fake *f, int n, int status, const char *path,
			       const char *method, const char *retry_after)
{
	pthread_mutex_lock(&f->mu);
	f->fail_n = n;
	f->fail_status = status;
	snprintf(f->fail_path, sizeof(f->fail_path), "%s", path ? path : "");
	snprintf(f->fail_method, sizeof(f->fail_method), "%s", method ? method : "");
	snprintf(f->fail_retry_after, sizeof(f->fail_retry_after), "%s",
		 retry_after ? retry_after : "");
	pthread_mutex_unlock(&f->mu);
}

static inline void fake_stop(struct fake *f);

/*
 * After fake_start() returned rc: 1 (with a note, the server stopped) when
 * TLS is unavailable here, so the test exits 77 (skipped); else 0.
 */
static inline int fake_unavailable(struct fake *f, int rc)
{
	if (rc != TFJ_EUNSUPP)
		return 0;
	fprintf(stderr, "skip: no openssl or no TLS in libmicrohttpd\n");
	fake_stop(f);
	return 1;
}

/* 0, or TFJ_EUNSUPP when openssl/TLS is unavailable (tests exit 77). */
static inline int fake_start(struct fake *f, const char *token)
{
	const union MHD_DaemonInfo *info;
	struct sockaddr_in lo;
	int rc;

	memset(f, 0, sizeof(*f));
	/* Loopback only, kernel-chosen port: test traffic never leaves the host. */
	memset(&lo, 0, sizeof(lo));
	lo.sin_family = AF_INET;
	lo.sin_port = 0;
	lo.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cond, NULL);
	if (!MHD_is_feature_supported(MHD_FEATURE_TLS))
		return TFJ_EUNSUPP;
	if ((rc = fake_make_pki(f)))
		return rc;
	snprintf(f->token, sizeof(f->token), "%s", token ? token : "");
	f->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
				MHD_USE_TLS,
				0, NULL, NULL, fake_handle, f,
				MHD_OPTION_HTTPS_MEM_KEY, f->key_pem,
				MHD_OPTION_HTTPS_MEM_CERT, f->cert_pem,
				MHD_OPTION_NOTIFY_COMPLETED, fake_done, f,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&lo,
				MHD_OPTION_END);
	if (!f->d)
		return TFJ_EIO;
	info = MHD_get_daemon_info(f->d, MHD_DAEMON_INFO_BIND_PORT);
	f->port = info ? info->port : 0;
	return f->port ? 0 : TFJ_EIO;
}

static inline void fake_stop(struct fake *f)
{
	pthread_mutex_lock(&f->mu);
	f->stopping = 1;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->mu);
	if (f->d)
		MHD_stop_daemon(f->d);
	for (int i = 0; i < f->nobj; i++)
		cJSON_Delete(f->objs[i].obj);
	for (int i = 0; i < f->nev; i++)
		free(f->ev[i].line);
	free(f->ev);
	for (int i = 0; i < FAKE_MAX_DOCS; i++)
		free(f->doc_body[i]);
	free(f->ca_pem);
	free(f->wrong_ca_pem);
	free(f->key_pem);
	free(f->cert_pem);
	tfj_testutil_rmtree(f->dir);
}

/* A kubeconfig struct pointing at the fake (CA inline); caller frees. */
static inline void fake_kubeconfig(struct fake *f, struct tfj_kubeconfig *kc, int wrong_ca)
{
	char s[64];
	const char *ca = wrong_ca ? f->wrong_ca_pem : f->ca_pem;
	memset(kc, 0, sizeof(*kc));
	snprintf(s, sizeof(s), "https://127.0.0.1:%d", f->port);
	kc->server = strdup(s);
	kc->ca_data = strdup(ca);
	kc->ca_len = strlen(ca);
	if (f->token[0])
		kc->token = strdup(f->token);
}

/* A client of the fake (CA inline; `o` may be NULL), checked; NULL on failure. */
static inline struct tfj_kube *fake_client(struct fake *f, const struct tfj_kube_opts *o)
{
	struct tfj_kubeconfig kc;
	struct tfj_kube *k = NULL;

	fake_kubeconfig(f, &kc, 0);
	TFJ_CHECK_INT(tfj_kube_new(&k, &kc, o), 0);
	tfj_kubeconfig_free(&kc);
	return k;
}

/*
 * Serves `body` (JSON; NULL: 404 again) at exactly `path` for GET, as the
 * API server serves /.well-known/openid-configuration and /openid/v1/jwks:
 * a request whose Accept header names neither `type` nor any type gets 406.
 * Returns how many GETs the path had before.
 */
static inline int fake_serve_doc(struct fake *f, const char *path, const char *type,
				 const char *body)
{
	int d, free_slot = -1, gets = 0;

	pthread_mutex_lock(&f->mu);
	for (d = 0; d < FAKE_MAX_DOCS; d++) {
		if (!strcmp(f->doc_path[d], path))
			break;
		if (free_slot < 0 && !f->doc_path[d][0])
			free_slot = d;
	}
	if (d == FAKE_MAX_DOCS)
		d = free_slot;
	if (d >= 0) {
		snprintf(f->doc_path[d], sizeof(f->doc_path[d]), "%s", path);
		snprintf(f->doc_type[d], sizeof(f->doc_type[d]), "%s", type);
		free(f->doc_body[d]);
		f->doc_body[d] = body ? strdup(body) : NULL;
		gets = f->doc_gets[d];
	}
	pthread_mutex_unlock(&f->mu);
	return gets;
}

/* GETs of a path served with fake_serve_doc. */
static inline int fake_doc_gets(struct fake *f, const char *path)
{
	int d, n = 0;

	pthread_mutex_lock(&f->mu);
	for (d = 0; d < FAKE_MAX_DOCS; d++)
		if (!strcmp(f->doc_path[d], path))
			n = f->doc_gets[d];
	pthread_mutex_unlock(&f->mu);
	return n;
}

/* Server-side changes, as a kubelet or another client would make them. */
static inline void fake_put_status(struct fake *f, const char *res, const char *ns, const char *name,
			    const char *status_json)
{
	struct fake_obj *o;
	pthread_mutex_lock(&f->mu);
	o = fake_find(f, res, ns, name);
	if (o) {
		cJSON_DeleteItemFromObject(o->obj, "status");
		cJSON_AddItemToObject(o->obj, "status", cJSON_Parse(status_json));
		f->rv++;
		fake_set_rv(o->obj, f->rv);
		fake_emit(f, "MODIFIED", res, ns, o->obj);
	}
	pthread_mutex_unlock(&f->mu);
}

/* Forgets history: watches from older versions get 410; open watches are cut. */
static inline void fake_compact_and_cut(struct fake *f)
{
	pthread_mutex_lock(&f->mu);
	f->rv++; /* history up to here is gone; a list still gives a valid version */
	f->compacted = f->rv;
	f->generation++;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->mu);
}

static inline int fake_count(struct fake *f, const char *res, const char *ns)
{
	int n = 0;
	pthread_mutex_lock(&f->mu);
	for (int i = 0; i < f->nobj; i++)
		if (f->objs[i].live && !strcmp(f->objs[i].res, res) &&
		    (!ns || !strcmp(f->objs[i].ns, ns)))
			n++;
	pthread_mutex_unlock(&f->mu);
	return n;
}

/* The uid of the object at `path`, read through client k, or "" (into out). */
static inline void fake_uid_of(struct tfj_kube *k, char *out, size_t n, const char *path)
{
	cJSON *o = NULL;
	const char *u;

	out[0] = '\0';
	if (tfj_kube_get(k, &o, path) == 0 &&
	    (u = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"),
							  "uid"))))
		snprintf(out, n, "%s", u);
	cJSON_Delete(o);
}

#endif
