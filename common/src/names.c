/*
 * names.c - DNS-1035 names for replica pods and services.
 */
#include <stdio.h>
#include <string.h>

#include "tfj/err.h"
#include "tfj/names.h"

#define TYPE_MAX 32

static int is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

int tfj_names_is_dns1035(const char *s)
{
	size_t n, i;

	if (!s)
		return 0;
	n = strnlen(s, TFJ_NAMES_LABEL_MAX + 1);
	if (n == 0 || n > TFJ_NAMES_LABEL_MAX)
		return 0;
	if (!(s[0] >= 'a' && s[0] <= 'z') || !is_lower_alnum(s[n - 1]))
		return 0;
	for (i = 0; i < n; i++)
		if (!is_lower_alnum(s[i]) && s[i] != '-')
			return 0;
	return 1;
}

int tfj_names_is_dns1123_label(const char *s, size_t n)
{
	size_t i;

	if (!s || n == 0 || n > TFJ_NAMES_LABEL_MAX || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
		return 0;
	for (i = 0; i < n; i++)
		if (!is_lower_alnum(s[i]) && s[i] != '-')
			return 0;
	return 1;
}

uint32_t tfj_names_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 16777619u;
	}
	return h;
}

/* Lowercases a replica type; only letters are allowed in one. */
static int normalise_type(char *out, const char *type)
{
	size_t i, n = type ? strnlen(type, TYPE_MAX) : 0;

	if (n == 0 || n >= TYPE_MAX)
		return tfj_err_set(TFJ_EINVAL, "replica type must be 1-%d letters", TYPE_MAX - 1);
	for (i = 0; i < n; i++) {
		char c = type[i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c < 'a' || c > 'z')
			return tfj_err_set(TFJ_EINVAL, "replica type '%s' must contain only letters",
					   type);
		out[i] = c;
	}
	out[n] = '\0';
	return 0;
}

int tfj_names_replica(char *out, size_t outlen, const char *job, const char *type, int index)
{
	char t[TYPE_MAX], suffix[TYPE_MAX + 16], prefix[TFJ_NAMES_LABEL_MAX + 1];
	size_t slen, jlen, avail, p = 0, i;
	int rc, n;

	if (outlen < TFJ_NAMES_LABEL_MAX + 1)
		return tfj_err_set(TFJ_EINVAL, "name buffer smaller than %d bytes",
				   TFJ_NAMES_LABEL_MAX + 1);
	out[0] = '\0';
	if (!job || !*job)
		return tfj_err_set(TFJ_EINVAL, "job name is empty");
	if (index < 0)
		return tfj_err_set(TFJ_ERANGE, "replica index %d is negative", index);
	if ((rc = normalise_type(t, type)))
		return rc;
	n = snprintf(suffix, sizeof(suffix), "-%s-%d", t, index);
	if (n < 0 || (size_t)n >= sizeof(suffix))
		return tfj_err_set(TFJ_EINTERNAL, "replica suffix overflow");
	slen = (size_t)n;
	jlen = strlen(job);

	/* The reference's plain form whenever it is already a valid label. */
	if (jlen + slen <= TFJ_NAMES_LABEL_MAX && tfj_names_is_dns1035(job)) {
		memcpy(out, job, jlen);
		memcpy(out + jlen, suffix, slen + 1);
		return 0;
	}

	/* Otherwise: a sanitised, shortened job prefix plus a hash of the full
	 * job name, so distinct jobs keep distinct names. */
	if (slen + 9 + 1 > TFJ_NAMES_LABEL_MAX)
		return tfj_err_set(TFJ_ERANGE, "replica suffix '%s' is too long", suffix);
	avail = TFJ_NAMES_LABEL_MAX - slen - 9;
	for (i = 0; job[i] && p < avail; i++) {
		char c = job[i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (!is_lower_alnum(c))
			c = '-';
		if (p == 0 && !(c >= 'a' && c <= 'z'))
			continue; /* a label must start with a letter */
		if (c == '-' && prefix[p - 1] == '-')
			continue;
		prefix[p++] = c;
	}
	while (p > 0 && prefix[p - 1] == '-')
		p--;
	if (p == 0)
		prefix[p++] = 'j';
	prefix[p] = '\0';
	n = snprintf(out, outlen, "%s-%08x%s", prefix, tfj_names_hash(job), suffix);
	if (n < 0 || (size_t)n > TFJ_NAMES_LABEL_MAX || !tfj_names_is_dns1035(out))
		return tfj_err_set(TFJ_EINTERNAL, "could not build a valid name for job '%s'", job);
	return 0;
}

static int valid_dns_name(const char *s, size_t max)
{
	size_t n = strnlen(s, max + 1), i;

	if (n == 0 || n > max || s[0] == '.' || s[0] == '-' || s[n - 1] == '.' || s[n - 1] == '-')
		return 0;
	for (i = 0; i < n; i++)
		if (!is_lower_alnum(s[i]) && s[i] != '-' && s[i] != '.')
			return 0;
	return 1;
}

int tfj_names_host(char *out, size_t outlen, const char *job, const char *type, int index,
		   const char *ns, const char *domain, int port)
{
	char name[TFJ_NAMES_LABEL_MAX + 1];
	int rc, n;

	if (outlen <= TFJ_NAMES_HOST_MAX)
		return tfj_err_set(TFJ_EINVAL, "host buffer smaller than %d bytes",
				   TFJ_NAMES_HOST_MAX + 1);
	if (!ns || !valid_dns_name(ns, TFJ_NAMES_LABEL_MAX) || strchr(ns, '.'))
		return tfj_err_set(TFJ_EINVAL, "namespace '%s' is not a DNS label", ns ? ns : "");
	if (domain && *domain && !valid_dns_name(domain, 190))
		return tfj_err_set(TFJ_EINVAL, "cluster domain '%s' is not a DNS name", domain);
	if (port < 1 || port > 65535)
		return tfj_err_set(TFJ_ERANGE, "port %d outside 1-65535", port);
	if ((rc = tfj_names_replica(name, sizeof(name), job, type, index)))
		return rc;
	if (domain && *domain)
		n = snprintf(out, outlen, "%s.%s.svc.%s:%d", name, ns, domain, port);
	else
		n = snprintf(out, outlen, "%s.%s.svc:%d", name, ns, port);
	if (n < 0 || (size_t)n >= outlen)
		return tfj_err_set(TFJ_ETOOBIG, "host name too long");
	return 0;
}
