/*
 * kubeconfig.c - kubeconfig files (libyaml) and the in-cluster config.
 */
#include "kube/kubeconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include <tfj/err.h>
#include <tfj/file.h>

void tfj_kubeconfig_free(struct tfj_kubeconfig *cfg)
{
	if (!cfg)
		return;
	free(cfg->server);
	free(cfg->ca_file);
	free(cfg->ca_data);
	free(cfg->cert_file);
	free(cfg->cert_data);
	if (cfg->key_data)
		memset(cfg->key_data, 0, cfg->key_len);
	free(cfg->key_file);
	free(cfg->key_data);
	if (cfg->token)
		memset(cfg->token, 0, strlen(cfg->token));
	free(cfg->token);
	free(cfg->token_file);
	free(cfg->namespace);
	memset(cfg, 0, sizeof(*cfg));
}

/* ---- libyaml document helpers ---- */

static yaml_node_t *node_get(yaml_document_t *doc, int id)
{
	return id > 0 ? yaml_document_get_node(doc, id) : NULL;
}

/* A mapping member by key; NULL when absent or the node is not a mapping. */
static yaml_node_t *map_get(yaml_document_t *doc, yaml_node_t *map, const char *key)
{
	yaml_node_pair_t *p;
	size_t klen = strlen(key);

	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node_get(doc, p->key);
		if (k && k->type == YAML_SCALAR_NODE && k->data.scalar.length == klen &&
		    memcmp(k->data.scalar.value, key, klen) == 0)
			return node_get(doc, p->value);
	}
	return NULL;
}

/* 1 for a plain YAML null (absent value). */
static int is_null(const yaml_node_t *n)
{
	if (!n)
		return 1;
	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	return n->data.scalar.length == 0 ||
	       (n->data.scalar.length == 1 && n->data.scalar.value[0] == '~') ||
	       (n->data.scalar.length == 4 && memcmp(n->data.scalar.value, "null", 4) == 0);
}

/*
 * A scalar member as a NUL-free string view. Returns 0 with *out NULL when
 * absent, TFJ_EPARSE when present but not a scalar or containing NUL.
 */
static int map_scalar(const char **out, size_t *len, yaml_document_t *doc,
		      yaml_node_t *map, const char *key, const char *where)
{
	yaml_node_t *n = map_get(doc, map, key);

	*out = NULL;
	*len = 0;
	if (is_null(n))
		return 0;
	if (n->type != YAML_SCALAR_NODE)
		return tfj_err_set(TFJ_EPARSE, "kubeconfig: %s.%s is not a string", where, key);
	if (memchr(n->data.scalar.value, '\0', n->data.scalar.length))
		return tfj_err_set(TFJ_EPARSE, "kubeconfig: %s.%s contains NUL", where, key);
	*out = (const char *)n->data.scalar.value;
	*len = n->data.scalar.length;
	return 0;
}

static int dup_str(char **out, const char *s, size_t len)
{
	*out = malloc(len + 1);
	if (!*out)
		return tfj_err_set(TFJ_ENOMEM, "kubeconfig: copying a string");
	memcpy(*out, s, len);
	(*out)[len] = '\0';
	return 0;
}

/* Finds the entry `name` in a list like clusters: [{name: x, cluster: {...}}]. */
static int find_named(yaml_node_t **out, yaml_document_t *doc, yaml_node_t *root,
		      const char *list, const char *field, const char *name)
{
	yaml_node_t *seq = map_get(doc, root, list);
	yaml_node_item_t *it;

	*out = NULL;
	if (is_null(seq))
		return tfj_err_set(TFJ_ENOTFOUND, "kubeconfig: no %s", list);
	if (seq->type != YAML_SEQUENCE_NODE)
		return tfj_err_set(TFJ_EPARSE, "kubeconfig: %s is not a list", list);
	for (it = seq->data.sequence.items.start; it < seq->data.sequence.items.top; it++) {
		yaml_node_t *e = node_get(doc, *it);
		const char *n;
		size_t nlen;
		int rc;
		if (!e || e->type != YAML_MAPPING_NODE)
			return tfj_err_set(TFJ_EPARSE, "kubeconfig: an entry of %s is not a map", list);
		rc = map_scalar(&n, &nlen, doc, e, "name", list);
		if (rc)
			return rc;
		if (n && nlen == strlen(name) && memcmp(n, name, nlen) == 0) {
			yaml_node_t *body = map_get(doc, e, field);
			if (!body || body->type != YAML_MAPPING_NODE)
				return tfj_err_set(TFJ_EPARSE, "kubeconfig: %s %s has no %s map",
						   list, name, field);
			*out = body;
			return 0;
		}
	}
	return tfj_err_set(TFJ_ENOTFOUND, "kubeconfig: %s has no entry named %s", list, name);
}

static int b64val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Standard base64 (whitespace ignored, padding optional) into a NUL-terminated blob. */
static int b64_decode(char **out, size_t *outlen, const char *in, size_t len, const char *what)
{
	char *buf;
	size_t o = 0, i, pad = 0;
	uint32_t acc = 0;
	int nbits = 0;

	if (len / 4 * 3 + 3 > TFJ_KUBECONFIG_MAX_BLOB)
		return tfj_err_set(TFJ_ETOOBIG, "kubeconfig: %s larger than %u bytes", what,
				   TFJ_KUBECONFIG_MAX_BLOB);
	buf = malloc(len / 4 * 3 + 4);
	if (!buf)
		return tfj_err_set(TFJ_ENOMEM, "kubeconfig: decoding %s", what);
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];
		int v;
		if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
			continue;
		if (c == '=') {
			pad++;
			continue;
		}
		v = b64val(c);
		if (v < 0 || pad) {
			free(buf);
			return tfj_err_set(TFJ_EINVAL, "kubeconfig: %s is not valid base64", what);
		}
		acc = (acc << 6) | (uint32_t)v;
		nbits += 6;
		if (nbits >= 8) {
			nbits -= 8;
			buf[o++] = (char)((acc >> nbits) & 0xff);
		}
	}
	if (pad > 2 || nbits >= 6 || o == 0) {
		free(buf);
		return tfj_err_set(TFJ_EINVAL, "kubeconfig: %s is not valid base64", what);
	}
	buf[o] = '\0';
	*out = buf;
	*outlen = o;
	return 0;
}

/* A path made absolute against basedir (the kubeconfig's directory). */
static int resolve_path(char **out, const char *p, size_t plen, const char *basedir)
{
	size_t blen;
	if (plen == 0)
		return tfj_err_set(TFJ_EINVAL, "kubeconfig: empty file path");
	if (p[0] == '/' || !basedir || !*basedir)
		return dup_str(out, p, plen);
	blen = strlen(basedir);
	if (blen > 4096 || plen > 4096)
		return tfj_err_set(TFJ_ETOOBIG, "kubeconfig: file path too long");
	*out = malloc(blen + plen + 2);
	if (!*out)
		return tfj_err_set(TFJ_ENOMEM, "kubeconfig: path");
	memcpy(*out, basedir, blen);
	(*out)[blen] = '/';
	memcpy(*out + blen + 1, p, plen);
	(*out)[blen + 1 + plen] = '\0';
	return 0;
}

/* Reads `<key>` (a path) and `<key>-data` (base64) of one map. */
static int read_pair(char **file, char **data, size_t *dlen, yaml_document_t *doc,
		     yaml_node_t *map, const char *key, const char *where, const char *basedir)
{
	char dkey[64];
	const char *v;
	size_t vlen;
	int rc;

	snprintf(dkey, sizeof(dkey), "%s-data", key);
	rc = map_scalar(&v, &vlen, doc, map, dkey, where);
	if (rc)
		return rc;
	if (v)
		return b64_decode(data, dlen, v, vlen, dkey);
	rc = map_scalar(&v, &vlen, doc, map, key, where);
	if (rc)
		return rc;
	if (v)
		return resolve_path(file, v, vlen, basedir);
	return 0;
}

static int check_server(const char *s)
{
	if (strncmp(s, "https://", 8) != 0)
		return tfj_err_set(TFJ_EINVAL, "kubeconfig: server %s is not an https:// URL "
				   "(plain HTTP is refused)", s);
	if (strlen(s) <= 8 || strlen(s) > 2048)
		return tfj_err_set(TFJ_EINVAL, "kubeconfig: server URL has a bad length");
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return tfj_err_set(TFJ_EINVAL, "kubeconfig: server URL contains a "
					   "control or space character");
	return 0;
}

static int parse_doc(struct tfj_kubeconfig *cfg, yaml_document_t *doc, const char *basedir)
{
	yaml_node_t *root = yaml_document_get_root_node(doc);
	yaml_node_t *ctx, *cluster, *user;
	const char *cur, *cname, *uname, *v;
	size_t curlen, len;
	char name[256];
	int rc;

	if (!root || root->type != YAML_MAPPING_NODE)
		return tfj_err_set(TFJ_EPARSE, "kubeconfig: the document is not a map");
	rc = map_scalar(&cur, &curlen, doc, root, "current-context", "kubeconfig");
	if (rc)
		return rc;
	if (!cur || curlen == 0)
		return tfj_err_set(TFJ_ENOTFOUND, "kubeconfig: no current-context");
	if (curlen >= sizeof(name))
		return tfj_err_set(TFJ_ETOOBIG, "kubeconfig: current-context name too long");
	memcpy(name, cur, curlen);
	name[curlen] = '\0';
	rc = find_named(&ctx, doc, root, "contexts", "context", name);
	if (rc)
		return rc;

	rc = map_scalar(&cname, &len, doc, ctx, "cluster", "context");
	if (rc)
		return rc;
	if (!cname || len >= sizeof(name))
		return tfj_err_set(TFJ_EPARSE, "kubeconfig: context %s names no cluster", cur);
	memcpy(name, cname, len);
	name[len] = '\0';
	rc = find_named(&cluster, doc, root, "clusters", "cluster", name);
	if (rc)
		return rc;

	rc = map_scalar(&v, &len, doc, ctx, "namespace", "context");
	if (rc || (v && (rc = dup_str(&cfg->namespace, v, len))))
		return rc;

	rc = map_scalar(&v, &len, doc, cluster, "insecure-skip-tls-verify", "cluster");
	if (rc)
		return rc;
	if (v && len == 4 && memcmp(v, "true", 4) == 0)
		return tfj_err_set(TFJ_EUNSUPP, "kubeconfig: insecure-skip-tls-verify is not "
				   "supported; give the cluster's CA instead");
	rc = map_scalar(&v, &len, doc, cluster, "server", "cluster");
	if (rc)
		return rc;
	if (!v)
		return tfj_err_set(TFJ_EPARSE, "kubeconfig: cluster %s has no server", name);
	while (len > 0 && v[len - 1] == '/')
		len--;
	if ((rc = dup_str(&cfg->server, v, len)) || (rc = check_server(cfg->server)))
		return rc;
	rc = read_pair(&cfg->ca_file, &cfg->ca_data, &cfg->ca_len, doc, cluster,
		       "certificate-authority", "cluster", basedir);
	if (rc)
		return rc;

	/* A context may have no user (anonymous); then no credentials. */
	rc = map_scalar(&uname, &len, doc, ctx, "user", "context");
	if (rc)
		return rc;
	if (!uname || len == 0)
		return 0;
	if (len >= sizeof(name))
		return tfj_err_set(TFJ_ETOOBIG, "kubeconfig: user name too long");
	memcpy(name, uname, len);
	name[len] = '\0';
	rc = find_named(&user, doc, root, "users", "user", name);
	if (rc)
		return rc;
	if (map_get(doc, user, "exec") || map_get(doc, user, "auth-provider"))
		return tfj_err_set(TFJ_EUNSUPP, "kubeconfig: user %s uses an exec or "
				   "auth-provider plugin, which is not supported", name);
	rc = read_pair(&cfg->cert_file, &cfg->cert_data, &cfg->cert_len, doc, user,
		       "client-certificate", "user", basedir);
	if (rc)
		return rc;
	rc = read_pair(&cfg->key_file, &cfg->key_data, &cfg->key_len, doc, user,
		       "client-key", "user", basedir);
	if (rc)
		return rc;
	if ((cfg->cert_file || cfg->cert_data) != (cfg->key_file || cfg->key_data))
		return tfj_err_set(TFJ_EINVAL, "kubeconfig: user %s has a client certificate "
				   "without a key or a key without a certificate", name);
	rc = map_scalar(&v, &len, doc, user, "token", "user");
	if (rc)
		return rc;
	if (v) {
		if (len > TFJ_KUBECONFIG_MAX_BLOB)
			return tfj_err_set(TFJ_ETOOBIG, "kubeconfig: token too long");
		return dup_str(&cfg->token, v, len);
	}
	rc = map_scalar(&v, &len, doc, user, "tokenFile", "user");
	if (rc)
		return rc;
	if (v)
		return resolve_path(&cfg->token_file, v, len, basedir);
	return 0;
}

int tfj_kubeconfig_parse(struct tfj_kubeconfig *out, const char *text, size_t len,
			 const char *basedir)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	int have_doc = 0, rc = 0;

	memset(out, 0, sizeof(*out));
	if (len > TFJ_KUBECONFIG_MAX_FILE)
		return tfj_err_set(TFJ_ETOOBIG, "kubeconfig: larger than %u bytes",
				   TFJ_KUBECONFIG_MAX_FILE);
	if (!yaml_parser_initialize(&parser))
		return tfj_err_set(TFJ_ENOMEM, "kubeconfig: yaml parser");
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		rc = tfj_err_set(TFJ_EPARSE, "kubeconfig: line %zu: %s",
				 parser.problem_mark.line + 1,
				 parser.problem ? parser.problem : "invalid YAML");
		goto out;
	}
	have_doc = 1;
	rc = parse_doc(out, &doc, basedir);
out:
	if (have_doc)
		yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	if (rc)
		tfj_kubeconfig_free(out);
	return rc;
}

int tfj_kubeconfig_load_file(struct tfj_kubeconfig *out, const char *path)
{
	char *text = NULL, *dir = NULL, *slash;
	size_t len;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = tfj_file_read(&text, &len, path, TFJ_KUBECONFIG_MAX_FILE, 0);
	if (rc)
		goto out;
	dir = strdup(path);
	if (!dir) {
		rc = tfj_err_set(TFJ_ENOMEM, "kubeconfig path");
		goto out;
	}
	slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
	rc = tfj_kubeconfig_parse(out, text, len, slash ? dir : NULL);
	if (rc)
		tfj_err_set(rc, "%s: %s", path, tfj_err_detail());
out:
	free(text);
	free(dir);
	return rc;
}

static int join(char **out, const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	*out = malloc(n);
	if (!*out)
		return tfj_err_set(TFJ_ENOMEM, "path");
	snprintf(*out, n, "%s/%s", dir, name);
	return 0;
}

int tfj_kubeconfig_in_cluster(struct tfj_kubeconfig *out, const char *sa_dir)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	char *ns = NULL, *p = NULL;
	size_t len, n;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (!sa_dir)
		sa_dir = TFJ_KUBECONFIG_SA_DIR;
	if (!host || !*host || !port || !*port)
		return tfj_err_set(TFJ_ENOTFOUND, "not in a cluster: KUBERNETES_SERVICE_HOST/PORT "
				   "not set");
	if (strlen(host) > 255 || strlen(port) > 5 || strspn(port, "0123456789") != strlen(port))
		return tfj_err_set(TFJ_EINVAL, "KUBERNETES_SERVICE_HOST/PORT malformed");
	n = strlen(host) + strlen(port) + 16;
	out->server = malloc(n);
	if (!out->server) {
		rc = tfj_err_set(TFJ_ENOMEM, "in-cluster config");
		goto out;
	}
	/* An IPv6 service address needs brackets in a URL. */
	if (strchr(host, ':'))
		snprintf(out->server, n, "https://[%s]:%s", host, port);
	else
		snprintf(out->server, n, "https://%s:%s", host, port);
	if ((rc = check_server(out->server)))
		goto out;
	if ((rc = join(&out->token_file, sa_dir, "token")) ||
	    (rc = join(&out->ca_file, sa_dir, "ca.crt")) || (rc = join(&p, sa_dir, "namespace")))
		goto out;
	if (access(out->token_file, R_OK) != 0) {
		rc = tfj_err_set(TFJ_ENOTFOUND, "in-cluster: no service account token at %s",
				 out->token_file);
		goto out;
	}
	if (tfj_file_read(&ns, &len, p, 253, 0) == 0) {
		while (len > 0 && (ns[len - 1] == '\n' || ns[len - 1] == ' '))
			ns[--len] = '\0';
		if (len > 0) {
			out->namespace = ns;
			ns = NULL;
		}
	}
	out->in_cluster = 1;
out:
	free(ns);
	free(p);
	if (rc)
		tfj_kubeconfig_free(out);
	return rc;
}

int tfj_kubeconfig_load_default(struct tfj_kubeconfig *out, const char *path)
{
	const char *env = getenv("KUBECONFIG");
	const char *home = getenv("HOME");
	char buf[4096];
	int rc;

	if (path && *path)
		return tfj_kubeconfig_load_file(out, path);
	if (env && *env) {
		size_t n = strcspn(env, ":");
		if (n >= sizeof(buf))
			return tfj_err_set(TFJ_ETOOBIG, "KUBECONFIG entry too long");
		memcpy(buf, env, n);
		buf[n] = '\0';
		return tfj_kubeconfig_load_file(out, buf);
	}
	rc = tfj_kubeconfig_in_cluster(out, NULL);
	if (rc != TFJ_ENOTFOUND)
		return rc;
	if (!home || !*home)
		return tfj_err_set(TFJ_ENOTFOUND, "no kubeconfig: not in a cluster, no $KUBECONFIG "
				   "and no $HOME");
	if (snprintf(buf, sizeof(buf), "%s/.kube/config", home) >= (int)sizeof(buf))
		return tfj_err_set(TFJ_ETOOBIG, "HOME too long");
	return tfj_kubeconfig_load_file(out, buf);
}
