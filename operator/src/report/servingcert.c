/*
 * servingcert.c - the report channel's serving certificate (see servingcert.h).
 */
#include "report/servingcert.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <tfj/clock.h>
#include <tfj/err.h>
#include <tfj/json.h>
#include <tfj/log.h>

#include "kube/apipath.h"

#define RETRY_MS 2000          /* while nothing is served */
#define PEM_END "-----END CERTIFICATE-----"

static const char *const keys[] = { "ca.crt", "ca.key", "tls.crt", "tls.key" };

struct tfj_servingcert {
	struct tfj_kube *k;
	char *ns, *secret, *ca_secret;
	char names[TFJ_SERVINGCERT_NAMES][256];
	int external;
	int64_t ca_life, leaf_life;
	int check_s;

	pthread_mutex_t mu;
	struct tfj_servingcert_pem cur;  /* served; NULL fields before ready */
	uint64_t gen, served_gen;
	int64_t not_after;               /* of the served certificate */
	_Atomic uint64_t loads;
	int grpc_up;

	pthread_cond_t cv;
	pthread_t th;
	int started, stop;
};

static char **field(struct tfj_servingcert_pem *p, size_t i)
{
	char **f[] = { &p->ca_crt, &p->ca_key, &p->tls_crt, &p->tls_key };

	return f[i];
}

static void wipe_free(char *s)
{
	if (s)
		OPENSSL_cleanse(s, strlen(s));
	free(s);
}

void tfj_servingcert_pem_free(struct tfj_servingcert_pem *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < 4; i++) {
		wipe_free(*field(p, i));
		*field(p, i) = NULL;
	}
}

int tfj_servingcert_names(char names[TFJ_SERVINGCERT_NAMES][256], const char *service,
			  const char *ns, const char *domain)
{
	const char *d = domain && *domain ? domain : "cluster.local";
	int w[4];

	w[0] = snprintf(names[0], 256, "%s", service);
	w[1] = snprintf(names[1], 256, "%s.%s", service, ns);
	w[2] = snprintf(names[2], 256, "%s.%s.svc", service, ns);
	w[3] = snprintf(names[3], 256, "%s.%s.svc.%s", service, ns, d);
	for (int i = 0; i < 4; i++)
		if (w[i] < 0 || w[i] >= 254)
			return tfj_err_set(TFJ_ETOOBIG, "report Service name too long");
	return 0;
}

int tfj_servingcert_service_of(char svc[64], char ns[64], char domain[128],
			       const char *hostport)
{
	const char *colon = strrchr(hostport, ':'), *dot1, *dot2, *rest;
	size_t hlen = colon ? (size_t)(colon - hostport) : strlen(hostport);

	svc[0] = ns[0] = domain[0] = '\0';
	dot1 = memchr(hostport, '.', hlen);
	if (!dot1 || dot1 == hostport || (size_t)(dot1 - hostport) >= 64 ||
	    (hostport[0] >= '0' && hostport[0] <= '9') || memchr(hostport, '[', hlen))
		goto bad;
	dot2 = memchr(dot1 + 1, '.', hlen - (size_t)(dot1 + 1 - hostport));
	rest = dot2 ? dot2 + 1 : hostport + hlen;
	if ((dot2 ? dot2 : hostport + hlen) - (dot1 + 1) < 1 ||
	    (dot2 ? dot2 : hostport + hlen) - (dot1 + 1) >= 64)
		goto bad;
	memcpy(svc, hostport, (size_t)(dot1 - hostport));
	svc[dot1 - hostport] = '\0';
	memcpy(ns, dot1 + 1, (size_t)((dot2 ? dot2 : hostport + hlen) - (dot1 + 1)));
	ns[(dot2 ? dot2 : hostport + hlen) - (dot1 + 1)] = '\0';
	/* "<svc>.<ns>.svc.<domain>": the domain agents resolve it in. */
	if (dot2 && (size_t)(hostport + hlen - rest) > 4 && !strncmp(rest, "svc.", 4)) {
		size_t dl = (size_t)(hostport + hlen - rest) - 4;

		if (dl >= 128)
			goto bad;
		memcpy(domain, rest + 4, dl);
		domain[dl] = '\0';
	} else if (dot2 && strncmp(rest, "svc", (size_t)(hostport + hlen - rest)) != 0) {
		goto bad;
	}
	return 0;
bad:
	svc[0] = ns[0] = domain[0] = '\0';
	return tfj_err_set(TFJ_EINVAL,
			   "report address '%s' is not <service>.<namespace>[.svc[.<domain>]]:<port>"
			   " (a certificate needs the Service's name; or --report-insecure)",
			   hostport);
}

/* The serving certificate verifies, for every name, at now. */
static int leaf_ok(const struct tfj_servingcert_pem *p, const char *const *names, size_t n,
		   int64_t now_s)
{
	for (size_t i = 0; i < n; i++)
		if (tfj_certgen_verify(p->ca_crt, p->tls_crt, p->tls_key, names[i], now_s))
			return 0;
	return 1;
}

enum tfj_servingcert_action tfj_servingcert_decide(const struct tfj_servingcert_pem *p,
						   const char *const *names, size_t n,
						   int64_t now_s)
{
	int64_t nb, na;

	/* The CA: present, its key with it, and not due. */
	if (!p->ca_crt || !p->ca_key || tfj_certgen_validity(&nb, &na, p->ca_crt) ||
	    tfj_certgen_renew_due(nb, na, now_s) || tfj_certgen_key_matches(p->ca_crt, p->ca_key))
		return TFJ_SERVINGCERT_NEW_CA;
	if (!p->tls_crt || !p->tls_key || tfj_certgen_validity(&nb, &na, p->tls_crt) ||
	    tfj_certgen_renew_due(nb, na, now_s) || !leaf_ok(p, names, n, now_s))
		return TFJ_SERVINGCERT_NEW_LEAF;
	return TFJ_SERVINGCERT_KEEP;
}

/* Base64 (standard alphabet, padded, no newlines) of s into a malloc'd string. */
static char *b64_encode(const char *s)
{
	size_t n = strlen(s);
	char *out = malloc(4 * ((n + 2) / 3) + 1);

	if (out)
		EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);
	return out;
}

/* Decodes base64 text into a NUL-terminated string; NULL when it is not base64. */
static char *b64_decode(const char *s)
{
	size_t n = strlen(s), pad = 0;
	unsigned char *out;
	int len;

	if (n == 0 || n % 4 || n > 4 * ((size_t)TFJ_CERTGEN_PEM_MAX / 3 + 1))
		return NULL;
	if (!(out = malloc(n / 4 * 3 + 1)))
		return NULL;
	len = EVP_DecodeBlock(out, (const unsigned char *)s, (int)n);
	if (len < 0) {
		free(out);
		return NULL;
	}
	/* EVP_DecodeBlock counts the padding as zero bytes. */
	if (s[n - 1] == '=')
		pad++;
	if (s[n - 2] == '=')
		pad++;
	len -= (int)pad;
	out[len] = '\0';
	/* PEM is text: an embedded NUL would cut it short without saying so. */
	if (memchr(out, '\0', (size_t)len)) {
		OPENSSL_cleanse(out, (size_t)len);
		free(out);
		return NULL;
	}
	return (char *)out;
}

int tfj_servingcert_from_secret(struct tfj_servingcert_pem *out, const cJSON *secret)
{
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(secret, "data");
	size_t i;

	memset(out, 0, sizeof(*out));
	if (!cJSON_IsObject(data))
		return 0;
	for (i = 0; i < 4; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(data, keys[i]);

		if (!cJSON_IsString(v) || !v->valuestring || !*v->valuestring)
			continue;
		if (!(*field(out, i) = b64_decode(v->valuestring))) {
			tfj_servingcert_pem_free(out);
			return tfj_err_set(TFJ_EPARSE, "Secret key %s: not base64 text", keys[i]);
		}
	}
	return 0;
}

int tfj_servingcert_to_secret(cJSON **out, const struct tfj_servingcert_pem *p, const char *ns,
			      const char *name)
{
	cJSON *s = cJSON_CreateObject(), *meta, *labels, *data;
	size_t i;

	*out = NULL;
	if (!s || !cJSON_AddStringToObject(s, "apiVersion", "v1") ||
	    !cJSON_AddStringToObject(s, "kind", "Secret") ||
	    !cJSON_AddStringToObject(s, "type", "kubernetes.io/tls") ||
	    !(meta = cJSON_AddObjectToObject(s, "metadata")) ||
	    !cJSON_AddStringToObject(meta, "name", name) ||
	    !cJSON_AddStringToObject(meta, "namespace", ns) ||
	    !(labels = cJSON_AddObjectToObject(meta, "labels")) ||
	    !cJSON_AddStringToObject(labels, "app.kubernetes.io/name", "tfjob-operator") ||
	    !cJSON_AddStringToObject(labels, "app.kubernetes.io/component", "report-tls") ||
	    !(data = cJSON_AddObjectToObject(s, "data")))
		goto nomem;
	for (i = 0; i < 4; i++) {
		const char *v = *field((struct tfj_servingcert_pem *)p, i);
		char *b;
		cJSON *item;

		if (!v)
			continue;
		if (!(b = b64_encode(v)))
			goto nomem;
		item = cJSON_AddStringToObject(data, keys[i], b);
		wipe_free(b);
		if (!item)
			goto nomem;
	}
	*out = s;
	return 0;
nomem:
	cJSON_Delete(s);
	return tfj_err_set(TFJ_ENOMEM, "Secret");
}

/* A copy of the first certificate of a PEM bundle; NULL when there is none. */
static char *first_cert(const char *bundle)
{
	const char *end = bundle ? strstr(bundle, PEM_END) : NULL;
	size_t n;
	char *s;

	if (!end)
		return NULL;
	n = (size_t)(end - bundle) + strlen(PEM_END);
	if (!(s = malloc(n + 2)))
		return NULL;
	memcpy(s, bundle, n);
	s[n] = '\n';
	s[n + 1] = '\0';
	return s;
}

/*
 * New material into *np for action act on the old material p: for a new
 * CA its bundle keeps the old CA while that is valid (agents that still
 * hold the old bundle verify nothing new, but the bundle they get next
 * trusts both), then a certificate from the (new or kept) CA.
 */
static int renew(struct tfj_servingcert *s, struct tfj_servingcert_pem *np,
		 const struct tfj_servingcert_pem *p, enum tfj_servingcert_action act,
		 int64_t now_s)
{
	struct tfj_certgen_pair ca = { 0 }, leaf = { 0 };
	const char *names[TFJ_SERVINGCERT_NAMES];
	int64_t nb, na;
	char *old = NULL;
	int rc, i;

	memset(np, 0, sizeof(*np));
	for (i = 0; i < TFJ_SERVINGCERT_NAMES; i++)
		names[i] = s->names[i];
	if (act == TFJ_SERVINGCERT_NEW_CA) {
		if ((rc = tfj_certgen_ca(&ca, "tfjob-operator-report-ca", now_s, s->ca_life)))
			goto out;
		old = first_cert(p ? p->ca_crt : NULL);
		if (old && (tfj_certgen_validity(&nb, &na, old) || na <= now_s)) {
			free(old);
			old = NULL;
		}
	} else {
		/* The CA pair of p, unchanged (decide checked it). */
		if (!(ca.cert_pem = first_cert(p->ca_crt)) || !(ca.key_pem = strdup(p->ca_key))) {
			rc = tfj_err_set(TFJ_ENOMEM, "Secret");
			goto out;
		}
	}
	if ((rc = tfj_certgen_leaf(&leaf, &ca, names, TFJ_SERVINGCERT_NAMES, now_s,
				   s->leaf_life)))
		goto out;
	if (act == TFJ_SERVINGCERT_NEW_CA) {
		size_t n = strlen(ca.cert_pem) + (old ? strlen(old) : 0) + 1;

		if (!(np->ca_crt = malloc(n))) {
			rc = tfj_err_set(TFJ_ENOMEM, "Secret");
			goto out;
		}
		snprintf(np->ca_crt, n, "%s%s", ca.cert_pem, old ? old : "");
	} else if (!(np->ca_crt = strdup(p->ca_crt))) {
		rc = tfj_err_set(TFJ_ENOMEM, "Secret");
		goto out;
	}
	np->ca_key = ca.key_pem;
	ca.key_pem = NULL;
	np->tls_crt = leaf.cert_pem;
	np->tls_key = leaf.key_pem;
	leaf.cert_pem = leaf.key_pem = NULL;
out:
	free(old);
	tfj_certgen_pair_free(&ca);
	tfj_certgen_pair_free(&leaf);
	if (rc)
		tfj_servingcert_pem_free(np);
	return rc;
}

char *tfj_servingcert_ca_secret_name(const char *secret)
{
	size_t n;
	char *name;

	if (!secret)
		return NULL;
	n = strlen(secret) + sizeof(TFJ_SERVINGCERT_CA_SUFFIX);
	if (!(name = malloc(n)))
		return NULL;
	snprintf(name, n, "%s%s", secret, TFJ_SERVINGCERT_CA_SUFFIX);
	return name;
}

static int same(const char *a, const char *b)
{
	return a && b ? !strcmp(a, b) : a == b;
}

/* Puts p into service if it differs from what is served and verifies. Takes p. */
static int load(struct tfj_servingcert *s, struct tfj_servingcert_pem *p, int64_t now_s)
{
	const char *names[TFJ_SERVINGCERT_NAMES];
	int64_t nb = 0, na = 0;
	int i, rc = 0;

	pthread_mutex_lock(&s->mu);
	if (same(s->cur.ca_crt, p->ca_crt) && same(s->cur.tls_crt, p->tls_crt) &&
	    same(s->cur.tls_key, p->tls_key)) {
		pthread_mutex_unlock(&s->mu);
		tfj_servingcert_pem_free(p);
		return 0;
	}
	pthread_mutex_unlock(&s->mu);
	for (i = 0; i < TFJ_SERVINGCERT_NAMES; i++)
		names[i] = s->names[i];
	if (!p->ca_crt || !p->tls_crt || !p->tls_key) {
		rc = tfj_err_set(TFJ_EINVAL, "Secret %s/%s lacks ca.crt, tls.crt or tls.key", s->ns,
				 s->secret);
	} else if (!leaf_ok(p, names, TFJ_SERVINGCERT_NAMES, now_s)) {
		/* Name the reason with the first name that failed. */
		for (i = 0; i < TFJ_SERVINGCERT_NAMES && !rc; i++)
			rc = tfj_certgen_verify(p->ca_crt, p->tls_crt, p->tls_key, names[i], now_s);
		rc = tfj_err_set(rc ? rc : TFJ_EINVAL, "Secret %s/%s: %s", s->ns, s->secret,
				 rc ? tfj_err_detail() : "does not verify");
	}
	if (rc) {
		tfj_servingcert_pem_free(p);
		return rc;
	}
	tfj_certgen_validity(&nb, &na, p->tls_crt);
	pthread_mutex_lock(&s->mu);
	tfj_servingcert_pem_free(&s->cur);
	s->cur = *p;
	/* The CA key is not needed to serve: keep it only in the Secret. */
	wipe_free(s->cur.ca_key);
	s->cur.ca_key = NULL;
	s->not_after = na;
	s->gen++;
	pthread_mutex_unlock(&s->mu);
	memset(p, 0, sizeof(*p));
	atomic_fetch_add(&s->loads, 1);
	{
		char until[32];

		snprintf(until, sizeof(until), "%lld", (long long)na);
		tfj_log_info("report channel: serving certificate loaded", "name", s->secret,
			     "namespace", s->ns, "dns", s->names[2], "not_after_unix", until);
	}
	return 0;
}

/* Writes p as Secret `name`: POST when rv is NULL, else PUT with rv. */
static int write_secret(struct tfj_servingcert *s, const char *name,
			const struct tfj_servingcert_pem *p, const char *rv)
{
	char path[512];
	cJSON *obj = NULL, *meta, *it;
	int rc;

	if ((rc = tfj_servingcert_to_secret(&obj, p, s->ns, name)))
		return rc;
	if (rv) {
		meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
		if (!cJSON_AddStringToObject(meta, "resourceVersion", rv)) {
			cJSON_Delete(obj);
			return tfj_err_set(TFJ_ENOMEM, "Secret");
		}
		rc = tfj_apipath_obj(path, sizeof(path), TFJ_APIPATH_CORE, s->ns, "secrets", name,
				     NULL);
		if (!rc)
			rc = tfj_kube_replace(s->k, NULL, path, obj);
	} else {
		rc = tfj_apipath_coll(path, sizeof(path), TFJ_APIPATH_CORE, s->ns, "secrets");
		if (!rc)
			rc = tfj_kube_create(s->k, NULL, path, obj);
	}
	/* The object held the keys (base64): wipe them before freeing. */
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(obj, "data"))
		if (cJSON_IsString(it) && it->valuestring)
			OPENSSL_cleanse(it->valuestring, strlen(it->valuestring));
	cJSON_Delete(obj);
	return rc;
}

/* One Secret as read: its material, resourceVersion ("" when absent). */
struct observed {
	int found;
	struct tfj_servingcert_pem p;
	char rv[64];
};

/*
 * GETs Secret `name` into *o. A Secret whose data is not base64 text counts
 * as found and empty (self-managed: it is replaced), except with external
 * (cert-manager's Secret is never replaced: the error is returned).
 */
static int read_secret(struct observed *o, struct tfj_servingcert *s, const char *name)
{
	const char *rv = NULL;
	char path[512];
	cJSON *obj = NULL;
	int rc;

	memset(o, 0, sizeof(*o));
	if ((rc = tfj_apipath_obj(path, sizeof(path), TFJ_APIPATH_CORE, s->ns, "secrets", name,
				  NULL)))
		return rc;
	rc = tfj_kube_get(s->k, &obj, path);
	if (rc == TFJ_ENOTFOUND)
		return 0;
	if (rc)
		return rc;
	o->found = 1;
	rc = tfj_servingcert_from_secret(&o->p, obj);
	if (tfj_json_get_string(&rv, cJSON_GetObjectItemCaseSensitive(obj, "metadata"),
				"resourceVersion") == 0 && rv && strlen(rv) < sizeof(o->rv))
		snprintf(o->rv, sizeof(o->rv), "%s", rv);
	cJSON_Delete(obj);
	if (rc && s->external)
		return rc;
	if (!o->rv[0]) {
		tfj_servingcert_pem_free(&o->p);
		return tfj_err_set(TFJ_EPARSE, "Secret %s/%s has no resourceVersion", s->ns, name);
	}
	return 0;
}

/* Two PEM texts start with the same certificate (both non-NULL). */
static int same_first(const char *a, const char *b)
{
	char *fa = first_cert(a), *fb = first_cert(b);
	int yes = fa && fb && !strcmp(fa, fb);

	free(fa);
	free(fb);
	return yes;
}

/*
 * The layout before the CA key had a Secret of its own: ca.key sat in the
 * serving Secret, which more parties may read than need the CA. A ca.key
 * found there moves to the CA Secret (when it is the key of the bundle's
 * first CA: the newest writer's CA, which agents trust already), and the
 * serving Secret is rewritten without it. Returns 1 when it wrote (read
 * both again), 0 when there was nothing to move, or an error.
 */
static int move_ca_key(struct tfj_servingcert *s, struct observed *srv, struct observed *ca)
{
	struct tfj_servingcert_pem cp = { 0 };
	int rc = 0;

	if (!srv->found || !srv->p.ca_key)
		return 0;
	if (srv->p.ca_crt && !tfj_certgen_key_matches(srv->p.ca_crt, srv->p.ca_key) &&
	    !(ca->found && ca->p.tls_crt && ca->p.tls_key &&
	      same_first(ca->p.tls_crt, srv->p.ca_crt))) {
		if (!(cp.tls_crt = first_cert(srv->p.ca_crt)) ||
		    !(cp.tls_key = strdup(srv->p.ca_key))) {
			rc = tfj_err_set(TFJ_ENOMEM, "Secret");
			goto out;
		}
		if ((rc = write_secret(s, s->ca_secret, &cp, ca->found ? ca->rv : NULL)))
			goto out;
	}
	wipe_free(srv->p.ca_key);
	srv->p.ca_key = NULL;
	if ((rc = write_secret(s, s->secret, &srv->p, srv->rv)))
		goto out;
	tfj_log_info("report channel: CA key moved out of the serving certificate's Secret",
		     "name", s->secret, "ca_key_in", s->ca_secret, "namespace", s->ns);
	rc = 1;
out:
	tfj_servingcert_pem_free(&cp);
	return rc;
}

/*
 * The material decide() looks at, from both Secrets, into *v: the CA key
 * from the CA Secret, the bundle and certificate from the serving Secret
 * while the bundle starts with the CA Secret's CA. When it does not (the CA
 * was rotated and the serving Secret not yet rewritten), the bundle is that
 * CA followed by the serving bundle's first CA while valid, and no serving
 * certificate, so a new one is made from the CA Secret's CA.
 */
static int view(struct tfj_servingcert_pem *v, struct observed *srv, struct observed *ca,
		int64_t now_s)
{
	char *old = NULL;
	int64_t nb, na;
	size_t n;

	memset(v, 0, sizeof(*v));
	if (!ca->found || !ca->p.tls_crt || !ca->p.tls_key) {
		/* No CA: a new one, keeping the served bundle's first CA. */
		v->ca_crt = srv->p.ca_crt;
		srv->p.ca_crt = NULL;
		return 0;
	}
	v->ca_key = ca->p.tls_key;
	ca->p.tls_key = NULL;
	if (srv->found && srv->p.ca_crt && same_first(srv->p.ca_crt, ca->p.tls_crt)) {
		*v = (struct tfj_servingcert_pem){ srv->p.ca_crt, v->ca_key, srv->p.tls_crt,
						   srv->p.tls_key };
		memset(&srv->p, 0, sizeof(srv->p));
		return 0;
	}
	old = first_cert(srv->p.ca_crt);
	if (old && (tfj_certgen_validity(&nb, &na, old) || na <= now_s)) {
		free(old);
		old = NULL;
	}
	n = strlen(ca->p.tls_crt) + (old ? strlen(old) : 0) + 1;
	if (!(v->ca_crt = malloc(n))) {
		free(old);
		tfj_servingcert_pem_free(v);
		return tfj_err_set(TFJ_ENOMEM, "Secret");
	}
	snprintf(v->ca_crt, n, "%s%s", ca->p.tls_crt, old ? old : "");
	free(old);
	return 0;
}

/*
 * Writes renewed material np: a new CA's pair into the CA Secret first (a
 * serving certificate never names a CA that is not kept), then the bundle
 * and certificate, without the CA key, into the serving Secret.
 */
static int write_both(struct tfj_servingcert *s, const struct tfj_servingcert_pem *np,
		      enum tfj_servingcert_action act, const struct observed *srv,
		      const struct observed *ca)
{
	struct tfj_servingcert_pem cp = { 0 }, sp = *np;
	int rc;

	if (act == TFJ_SERVINGCERT_NEW_CA) {
		if (!(cp.tls_crt = first_cert(np->ca_crt)))
			return tfj_err_set(TFJ_ENOMEM, "Secret");
		cp.tls_key = np->ca_key;
		rc = write_secret(s, s->ca_secret, &cp, ca->found ? ca->rv : NULL);
		free(cp.tls_crt);
		if (rc)
			return rc;
	}
	sp.ca_key = NULL;
	return write_secret(s, s->secret, &sp, srv->found ? srv->rv : NULL);
}

/* The external (cert-manager) pass: read and serve, write nothing. */
static int sync_external(struct tfj_servingcert *s, int64_t now_s)
{
	struct observed srv;
	int rc;

	if ((rc = read_secret(&srv, s, s->secret)))
		return rc;
	if (!srv.found)
		return tfj_err_set(TFJ_EUNAVAIL, "Secret %s/%s not there yet (cert-manager)", s->ns,
				   s->secret);
	return load(s, &srv.p, now_s);
}

int tfj_servingcert_sync(struct tfj_servingcert *s, int64_t now_s)
{
	const char *names[TFJ_SERVINGCERT_NAMES];
	int attempt, rc = 0, i;

	if (s->external)
		return sync_external(s, now_s);
	for (i = 0; i < TFJ_SERVINGCERT_NAMES; i++)
		names[i] = s->names[i];
	/* Each retry follows a 409 (another replica wrote first) or a move. */
	for (attempt = 0; attempt < 4; attempt++) {
		struct observed srv = { 0 }, ca = { 0 };
		struct tfj_servingcert_pem v = { 0 }, np = { 0 };
		enum tfj_servingcert_action act;
		int finished = 0;

		if ((rc = read_secret(&srv, s, s->secret)) || (rc = read_secret(&ca, s, s->ca_secret)))
			goto next;
		if ((rc = move_ca_key(s, &srv, &ca)) != 0)
			goto next;
		if ((rc = view(&v, &srv, &ca, now_s)))
			goto next;
		act = tfj_servingcert_decide(&v, names, TFJ_SERVINGCERT_NAMES, now_s);
		if (act == TFJ_SERVINGCERT_KEEP) {
			rc = load(s, &v, now_s);
			finished = 1;
			goto next;
		}
		if ((rc = renew(s, &np, &v, act, now_s)) ||
		    (rc = write_both(s, &np, act, &srv, &ca)))
			goto next;
		tfj_log_info(act == TFJ_SERVINGCERT_NEW_CA && !ca.found
				     ? "report channel: CA and serving certificate created"
			     : act == TFJ_SERVINGCERT_NEW_CA
				     ? "report channel: CA rotated"
				     : "report channel: serving certificate rotated",
			     "name", s->secret, "ca_key_in", s->ca_secret, "namespace", s->ns);
		rc = load(s, &np, now_s);
		finished = 1;
	next:
		/* load() leaves what it was given empty: freeing it again is safe. */
		tfj_servingcert_pem_free(&srv.p);
		tfj_servingcert_pem_free(&ca.p);
		tfj_servingcert_pem_free(&v);
		tfj_servingcert_pem_free(&np);
		if (finished || (rc < 0 && rc != TFJ_EEXIST && rc != TFJ_ECONFLICT))
			return rc;
	}
	return tfj_err_set(TFJ_ECONFLICT, "Secret %s/%s: conflicts kept coming", s->ns, s->secret);
}

static void *run(void *arg)
{
	struct tfj_servingcert *s = arg;
	struct timespec until;
	uint64_t wait_ms;

	pthread_mutex_lock(&s->mu);
	while (!s->stop) {
		int rc;

		pthread_mutex_unlock(&s->mu);
		rc = tfj_servingcert_sync(s, tfj_clock_unix_ms() / 1000);
		if (rc)
			tfj_log_warn("report channel: serving certificate not synced", "error",
				     tfj_err_detail());
		pthread_mutex_lock(&s->mu);
		/* Serving already: a failed check waits for the next period too. */
		wait_ms = s->cur.tls_crt ? (uint64_t)s->check_s * 1000 : RETRY_MS;
		tfj_clock_deadline(&until, wait_ms);
		while (!s->stop)
			if (pthread_cond_timedwait(&s->cv, &s->mu, &until) == ETIMEDOUT)
				break;
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

int tfj_servingcert_new(struct tfj_servingcert **out, struct tfj_kube *k,
			const struct tfj_servingcert_opts *o)
{
	struct tfj_servingcert *s;
	int rc;

	*out = NULL;
	if (!k || !o || !o->namespace || !*o->namespace || !o->service || !*o->service)
		return tfj_err_set(TFJ_EINVAL, "serving certificate: namespace and service needed");
	if (!(s = calloc(1, sizeof(*s))))
		return tfj_err_set(TFJ_ENOMEM, "serving certificate");
	s->k = k;
	pthread_mutex_init(&s->mu, NULL);
	tfj_clock_cond_init(&s->cv);
	s->ns = strdup(o->namespace);
	s->secret = strdup(o->secret && *o->secret ? o->secret : TFJ_SERVINGCERT_DEFAULT_SECRET);
	s->ca_secret = tfj_servingcert_ca_secret_name(s->secret);
	s->external = o->external;
	s->ca_life = o->ca_lifetime_s > 0 ? o->ca_lifetime_s : TFJ_SERVINGCERT_CA_LIFETIME_S;
	s->leaf_life = o->leaf_lifetime_s > 0 ? o->leaf_lifetime_s
					      : TFJ_SERVINGCERT_LEAF_LIFETIME_S;
	s->check_s = o->check_s > 0 ? o->check_s : 60;
	if (!s->ns || !s->secret || !s->ca_secret) {
		tfj_servingcert_free(s);
		return tfj_err_set(TFJ_ENOMEM, "serving certificate");
	}
	if ((rc = tfj_servingcert_names(s->names, o->service, o->namespace, o->cluster_domain))) {
		tfj_servingcert_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

int tfj_servingcert_start(struct tfj_servingcert *s)
{
	if (pthread_create(&s->th, NULL, run, s))
		return tfj_err_set(TFJ_EINTERNAL, "serving certificate: cannot start a thread");
	s->started = 1;
	return 0;
}

int tfj_servingcert_ready(struct tfj_servingcert *s)
{
	int r;

	pthread_mutex_lock(&s->mu);
	r = s->cur.tls_crt != NULL;
	pthread_mutex_unlock(&s->mu);
	return r;
}

int tfj_servingcert_ca(char **pem, uint64_t *gen, struct tfj_servingcert *s)
{
	int rc = 0;

	*pem = NULL;
	pthread_mutex_lock(&s->mu);
	if (!s->cur.ca_crt)
		rc = tfj_err_set(TFJ_EUNAVAIL, "report channel: no CA loaded yet");
	else if (!(*pem = strdup(s->cur.ca_crt)))
		rc = tfj_err_set(TFJ_ENOMEM, "CA");
	*gen = s->gen;
	pthread_mutex_unlock(&s->mu);
	return rc;
}

int tfj_servingcert_metrics(struct tfj_servingcert *s, struct tfj_buf *out)
{
	int64_t na;
	int rc;

	if (!s)
		return 0;
	pthread_mutex_lock(&s->mu);
	na = s->cur.tls_crt ? s->not_after : 0;
	pthread_mutex_unlock(&s->mu);
	rc = tfj_buf_printf(out,
			    "# HELP tfjob_report_tls_cert_expiry_timestamp_seconds notAfter of the "
			    "report channel's served certificate (0: none yet).\n"
			    "# TYPE tfjob_report_tls_cert_expiry_timestamp_seconds gauge\n"
			    "tfjob_report_tls_cert_expiry_timestamp_seconds %lld\n"
			    "# HELP tfjob_report_tls_cert_loads_total Serving certificates put into "
			    "service (start and rotations).\n"
			    "# TYPE tfjob_report_tls_cert_loads_total counter\n"
			    "tfjob_report_tls_cert_loads_total %llu\n",
			    (long long)na, (unsigned long long)atomic_load(&s->loads));
	return rc ? TFJ_ENOMEM : 0;
}

uint64_t tfj_servingcert_loads(struct tfj_servingcert *s)
{
	return atomic_load(&s->loads);
}

/*
 * gRPC asks on every handshake (and once when the port is added); only a
 * changed certificate is handed over, so a rotation reaches new
 * connections while established ones keep theirs.
 */
static grpc_ssl_certificate_config_reload_status fetch(void *ud,
						       grpc_ssl_server_certificate_config **cfg)
{
	struct tfj_servingcert *s = ud;
	grpc_ssl_pem_key_cert_pair pair;
	grpc_ssl_certificate_config_reload_status st = GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_UNCHANGED;

	pthread_mutex_lock(&s->mu);
	if (!s->cur.tls_crt) {
		st = GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_FAIL;
	} else if (s->served_gen != s->gen) {
		pair.private_key = s->cur.tls_key;
		pair.cert_chain = s->cur.tls_crt;
		/*
		 * gRPC copies the strings. No client certificates are asked for,
		 * so the roots verify nothing; gRPC insists on having some.
		 */
		*cfg = grpc_ssl_server_certificate_config_create(s->cur.ca_crt, &pair, 1);
		if (*cfg) {
			s->served_gen = s->gen;
			st = GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_NEW;
		} else {
			st = GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_FAIL;
		}
	}
	pthread_mutex_unlock(&s->mu);
	return st;
}

grpc_server_credentials *tfj_servingcert_server_creds(struct tfj_servingcert *s)
{
	grpc_ssl_server_credentials_options *o;

	if (!s->grpc_up) {
		grpc_init();
		s->grpc_up = 1;
	}
	/* One server per manager: its first fetch must hand over the certificate. */
	pthread_mutex_lock(&s->mu);
	s->served_gen = 0;
	pthread_mutex_unlock(&s->mu);
	o = grpc_ssl_server_credentials_create_options_using_config_fetcher(
		GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE, fetch, s);
	return o ? grpc_ssl_server_credentials_create_with_options(o) : NULL;
}

void tfj_servingcert_free(struct tfj_servingcert *s)
{
	if (!s)
		return;
	if (s->started) {
		pthread_mutex_lock(&s->mu);
		s->stop = 1;
		pthread_cond_broadcast(&s->cv);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->th, NULL);
	}
	tfj_servingcert_pem_free(&s->cur);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s->ns);
	free(s->secret);
	free(s->ca_secret);
	if (s->grpc_up)
		grpc_shutdown();
	free(s);
}
