/*
 * certgen.c - CA and serving certificates with libcrypto (see certgen.h).
 */
#include "tfj/certgen.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <tfj/err.h>

/* OpenSSL's own reason for the last failure, for the error detail. */
static const char *ossl_reason(void)
{
	unsigned long e = ERR_get_error();
	const char *r = e ? ERR_reason_error_string(e) : NULL;

	ERR_clear_error();
	return r ? r : "unknown error";
}

static char *bio_string(BIO *b)
{
	BUF_MEM *m = NULL;
	char *s;

	BIO_get_mem_ptr(b, &m);
	if (!m || !(s = malloc(m->length + 1)))
		return NULL;
	memcpy(s, m->data, m->length);
	s[m->length] = '\0';
	return s;
}

static int to_pem(struct tfj_certgen_pair *out, X509 *x, EVP_PKEY *k)
{
	BIO *bc = BIO_new(BIO_s_mem()), *bk = BIO_new(BIO_s_mem());
	int rc = 0;

	if (!bc || !bk || !PEM_write_bio_X509(bc, x) ||
	    !PEM_write_bio_PrivateKey(bk, k, NULL, NULL, 0, NULL, NULL) ||
	    !(out->cert_pem = bio_string(bc)) || !(out->key_pem = bio_string(bk))) {
		rc = tfj_err_set(TFJ_ENOMEM, "certificate: PEM encoding failed");
		tfj_certgen_pair_free(out);
	}
	if (bk) {
		/* The key's PEM text sat in this buffer: wipe it before it is freed. */
		BUF_MEM *m = NULL;

		BIO_get_mem_ptr(bk, &m);
		if (m && m->data)
			OPENSSL_cleanse(m->data, m->length);
	}
	BIO_free(bc);
	BIO_free(bk);
	return rc;
}

static X509 *read_cert(const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;

	BIO_free(b);
	return x;
}

static EVP_PKEY *read_key(const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;

	BIO_free(b);
	return k;
}

static int add_ext(X509 *issuer, X509 *x, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *e;
	int ok;

	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	if (!(e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value)))
		return 0;
	ok = X509_add_ext(x, e, -1);
	X509_EXTENSION_free(e);
	return ok;
}

/* A new certificate with its key, serial, subject CN and validity set; unsigned. */
static int start_cert(X509 **xo, EVP_PKEY **ko, const char *cn, int64_t from, int64_t to)
{
	unsigned char serial[16];
	X509_NAME *name;
	BIGNUM *bn = NULL;
	EVP_PKEY *k;
	X509 *x;

	*xo = NULL;
	*ko = NULL;
	if (!(k = EVP_EC_gen("P-256")))
		return tfj_err_set(TFJ_EINTERNAL, "certificate key: %s", ossl_reason());
	if (!(x = X509_new())) {
		EVP_PKEY_free(k);
		return tfj_err_set(TFJ_ENOMEM, "certificate");
	}
	/* Positive, nonzero 128-bit serial: the top bit cleared, one low bit set. */
	if (RAND_bytes(serial, sizeof(serial)) != 1)
		goto fail;
	serial[0] &= 0x7f;
	serial[sizeof(serial) - 1] |= 1;
	if (!(bn = BN_bin2bn(serial, sizeof(serial), NULL)) ||
	    !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) || !X509_set_version(x, 2) ||
	    !ASN1_TIME_set(X509_getm_notBefore(x), (time_t)from) ||
	    !ASN1_TIME_set(X509_getm_notAfter(x), (time_t)to) || !X509_set_pubkey(x, k) ||
	    !(name = X509_get_subject_name(x)) ||
	    !X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
					(const unsigned char *)"tfjob-operator", -1, -1, 0) ||
	    !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1,
					-1, 0))
		goto fail;
	BN_free(bn);
	*xo = x;
	*ko = k;
	return 0;
fail:
	BN_free(bn);
	X509_free(x);
	EVP_PKEY_free(k);
	return tfj_err_set(TFJ_EINTERNAL, "certificate: %s", ossl_reason());
}

/* A signed self-made CA certificate and its key, in memory (*xo, *ko the caller's). */
static int make_ca(X509 **xo, EVP_PKEY **ko, const char *cn, int64_t now_s, int64_t lifetime_s)
{
	EVP_PKEY *k = NULL;
	X509 *x = NULL;
	int rc;

	*xo = NULL;
	*ko = NULL;
	if (!cn || !*cn || strlen(cn) > 64 || lifetime_s <= 0)
		return tfj_err_set(TFJ_EINVAL, "CA: a common name (1-64) and a lifetime are needed");
	if ((rc = start_cert(&x, &k, cn, now_s - TFJ_CERTGEN_BACKDATE_S, now_s + lifetime_s)))
		return rc;
	if (!X509_set_issuer_name(x, X509_get_subject_name(x)) ||
	    !add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
	    !add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") ||
	    !add_ext(x, x, NID_subject_key_identifier, "hash") ||
	    !X509_sign(x, k, EVP_sha256())) {
		X509_free(x);
		EVP_PKEY_free(k);
		return tfj_err_set(TFJ_EINTERNAL, "CA: %s", ossl_reason());
	}
	*xo = x;
	*ko = k;
	return 0;
}

int tfj_certgen_ca(struct tfj_certgen_pair *out, const char *cn, int64_t now_s,
		   int64_t lifetime_s)
{
	EVP_PKEY *k = NULL;
	X509 *x = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = make_ca(&x, &k, cn, now_s, lifetime_s)) == 0)
		rc = to_pem(out, x, k);
	X509_free(x);
	EVP_PKEY_free(k);
	return rc;
}

/* 1 when name is an IPv4 or IPv6 literal, which a subjectAltName holds as an IP address. */
static int is_ip(const char *name)
{
	unsigned char a[16];

	return inet_pton(AF_INET, name, a) == 1 || inet_pton(AF_INET6, name, a) == 1;
}

/* "DNS:a,IP:127.0.0.1" for the subjectAltName extension, within cap. */
static int san_list(char *buf, size_t cap, const char *const *names, size_t n)
{
	size_t len = 0, i;

	for (i = 0; i < n; i++) {
		int w;
		const char *p;

		if (!names[i] || !*names[i] || strlen(names[i]) > 253)
			return tfj_err_set(TFJ_EINVAL, "certificate: a DNS name of 1-253 characters");
		/* The extension's text form is comma-separated: no commas or spaces. */
		if (is_ip(names[i])) {
			w = snprintf(buf + len, cap - len, "%sIP:%s", i ? "," : "", names[i]);
			if (w < 0 || (size_t)w >= cap - len)
				return tfj_err_set(TFJ_ETOOBIG, "certificate: too many names");
			len += (size_t)w;
			continue;
		}
		for (p = names[i]; *p; p++)
			if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' ||
			      *p == '.' || (*p >= 'A' && *p <= 'Z') || *p == '*'))
				return tfj_err_set(TFJ_EINVAL, "certificate: bad DNS name '%s'",
						   names[i]);
		w = snprintf(buf + len, cap - len, "%sDNS:%s", i ? "," : "", names[i]);
		if (w < 0 || (size_t)w >= cap - len)
			return tfj_err_set(TFJ_ETOOBIG, "certificate: too many names");
		len += (size_t)w;
	}
	return 0;
}

static int sign_leaf(struct tfj_certgen_pair *out, X509 *cax, EVP_PKEY *cak,
		     const char *const *names, size_t n, int64_t now_s, int64_t to);

int tfj_certgen_leaf(struct tfj_certgen_pair *out, const struct tfj_certgen_pair *ca,
		     const char *const *names, size_t n, int64_t now_s, int64_t lifetime_s)
{
	EVP_PKEY *cak = NULL;
	X509 *cax = NULL;
	int64_t to = now_s + lifetime_s, ca_from, ca_to;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!ca || !ca->cert_pem || !ca->key_pem || n < 1 || n > TFJ_CERTGEN_MAX_NAMES ||
	    lifetime_s <= 0)
		return tfj_err_set(TFJ_EINVAL, "certificate: a CA, 1-%d names and a lifetime",
				   TFJ_CERTGEN_MAX_NAMES);
	if ((rc = tfj_certgen_validity(&ca_from, &ca_to, ca->cert_pem)))
		return rc;
	if (to > ca_to)
		to = ca_to;  /* a certificate outliving its issuer would not verify anyway */
	if (!(cax = read_cert(ca->cert_pem)) || !(cak = read_key(ca->key_pem))) {
		rc = tfj_err_set(TFJ_EINVAL, "certificate: unreadable CA: %s", ossl_reason());
		goto out;
	}
	rc = sign_leaf(out, cax, cak, names, n, now_s, to);
out:
	X509_free(cax);
	EVP_PKEY_free(cak);
	return rc;
}

int tfj_certgen_ca_and_leaf(struct tfj_certgen_pair *leaf, char **ca_cert_pem,
			    const char *ca_cn, const char *const *names, size_t n, int64_t now_s,
			    int64_t lifetime_s)
{
	EVP_PKEY *cak = NULL;
	X509 *cax = NULL;
	BIO *b = NULL;
	int rc;

	memset(leaf, 0, sizeof(*leaf));
	*ca_cert_pem = NULL;
	if (n < 1 || n > TFJ_CERTGEN_MAX_NAMES)
		return tfj_err_set(TFJ_EINVAL, "certificate: 1-%d names", TFJ_CERTGEN_MAX_NAMES);
	/* The CA's key stays an in-memory key: never printed, never parsed back. */
	if ((rc = make_ca(&cax, &cak, ca_cn, now_s, lifetime_s)) ||
	    (rc = sign_leaf(leaf, cax, cak, names, n, now_s, now_s + lifetime_s)))
		goto out;
	if (!(b = BIO_new(BIO_s_mem())) || !PEM_write_bio_X509(b, cax) ||
	    !(*ca_cert_pem = bio_string(b))) {
		rc = tfj_err_set(TFJ_ENOMEM, "certificate: PEM encoding failed");
		tfj_certgen_pair_free(leaf);
	}
out:
	BIO_free(b);
	X509_free(cax);
	EVP_PKEY_free(cak);
	return rc;
}

/* The serving certificate for names, valid until `to`, signed by cax's key cak. */
static int sign_leaf(struct tfj_certgen_pair *out, X509 *cax, EVP_PKEY *cak,
		     const char *const *names, size_t n, int64_t now_s, int64_t to)
{
	char san[TFJ_CERTGEN_MAX_NAMES * 260], cn[65];
	EVP_PKEY *k = NULL;
	X509 *x = NULL;
	int rc;

	if ((rc = san_list(san, sizeof(san), names, n)))
		return rc;
	/*
	 * X.509 caps a common name at 64 characters; clients match the
	 * subjectAltNames, so a longer first name gives its first label.
	 */
	snprintf(cn, sizeof(cn), "%.*s", strlen(names[0]) <= 64 ? 64 : (int)strcspn(names[0], "."),
		 names[0]);
	if ((rc = start_cert(&x, &k, cn, now_s - TFJ_CERTGEN_BACKDATE_S, to)))
		goto out;
	if (!X509_set_issuer_name(x, X509_get_subject_name(cax)) ||
	    !add_ext(cax, x, NID_basic_constraints, "critical,CA:FALSE") ||
	    !add_ext(cax, x, NID_key_usage, "critical,digitalSignature,keyEncipherment") ||
	    !add_ext(cax, x, NID_ext_key_usage, "serverAuth") ||
	    !add_ext(cax, x, NID_authority_key_identifier, "keyid:always") ||
	    !add_ext(cax, x, NID_subject_alt_name, san) || !X509_sign(x, cak, EVP_sha256())) {
		rc = tfj_err_set(TFJ_EINTERNAL, "certificate: %s", ossl_reason());
		goto out;
	}
	rc = to_pem(out, x, k);
out:
	X509_free(x);
	EVP_PKEY_free(k);
	return rc;
}

void tfj_certgen_pair_free(struct tfj_certgen_pair *p)
{
	if (!p)
		return;
	if (p->key_pem)
		OPENSSL_cleanse(p->key_pem, strlen(p->key_pem));
	free(p->key_pem);
	free(p->cert_pem);
	p->key_pem = p->cert_pem = NULL;
}

static int asn1_unix(int64_t *out, const ASN1_TIME *t)
{
	struct tm tm;

	if (!t || !ASN1_TIME_to_tm(t, &tm))
		return TFJ_EINVAL;
	*out = (int64_t)timegm(&tm);
	return 0;
}

int tfj_certgen_validity(int64_t *not_before, int64_t *not_after, const char *pem)
{
	X509 *x;
	int rc = 0;

	if (!pem || strlen(pem) > TFJ_CERTGEN_PEM_MAX || !(x = read_cert(pem))) {
		ERR_clear_error();
		return tfj_err_set(TFJ_EINVAL, "certificate: not a PEM certificate");
	}
	if (asn1_unix(not_before, X509_get0_notBefore(x)) ||
	    asn1_unix(not_after, X509_get0_notAfter(x)))
		rc = tfj_err_set(TFJ_EINVAL, "certificate: unreadable validity");
	X509_free(x);
	return rc;
}

int tfj_certgen_renew_due(int64_t not_before, int64_t not_after, int64_t now_s)
{
	if (not_after <= not_before || now_s < not_before || now_s >= not_after)
		return 1;
	/* Left < a third of the lifetime, written without overflow or division. */
	return (not_after - now_s) * 3 < (not_after - not_before);
}

/* Every certificate of a PEM bundle into the store; the number added. */
static int add_roots(X509_STORE *st, const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x;
	int n = 0;

	if (!b)
		return 0;
	while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
		if (X509_STORE_add_cert(st, x))
			n++;
		X509_free(x);
	}
	ERR_clear_error(); /* the end of the bundle reads as an error */
	BIO_free(b);
	return n;
}

int tfj_certgen_key_matches(const char *cert_pem, const char *key_pem)
{
	X509 *x = NULL;
	EVP_PKEY *k = NULL;
	int rc = 0;

	if (!cert_pem || !key_pem || strlen(cert_pem) > TFJ_CERTGEN_PEM_MAX ||
	    strlen(key_pem) > TFJ_CERTGEN_PEM_MAX || !(x = read_cert(cert_pem)) ||
	    !(k = read_key(key_pem)) || X509_check_private_key(x, k) != 1)
		rc = tfj_err_set(TFJ_EINVAL, "certificate: the key does not match the certificate");
	ERR_clear_error();
	X509_free(x);
	EVP_PKEY_free(k);
	return rc;
}

int tfj_certgen_verify(const char *ca_pem, const char *cert_pem, const char *key_pem,
		       const char *name, int64_t now_s)
{
	X509_STORE *st = NULL;
	X509_STORE_CTX *ctx = NULL;
	X509_VERIFY_PARAM *vp;
	EVP_PKEY *k = NULL;
	X509 *x = NULL;
	int rc = 0;

	if (!ca_pem || !cert_pem || !key_pem || !name || strlen(ca_pem) > TFJ_CERTGEN_PEM_MAX ||
	    strlen(cert_pem) > TFJ_CERTGEN_PEM_MAX || strlen(key_pem) > TFJ_CERTGEN_PEM_MAX)
		return tfj_err_set(TFJ_EINVAL, "certificate: missing or oversized PEM");
	if (!(x = read_cert(cert_pem))) {
		rc = tfj_err_set(TFJ_EINVAL, "certificate: tls.crt is not a PEM certificate");
		goto out;
	}
	if (!(k = read_key(key_pem))) {
		rc = tfj_err_set(TFJ_EINVAL, "certificate: tls.key is not a PEM private key");
		goto out;
	}
	if (X509_check_private_key(x, k) != 1) {
		rc = tfj_err_set(TFJ_EINVAL, "certificate: tls.key does not match tls.crt");
		goto out;
	}
	if (!(st = X509_STORE_new()) || !(ctx = X509_STORE_CTX_new())) {
		rc = tfj_err_set(TFJ_ENOMEM, "certificate store");
		goto out;
	}
	if (add_roots(st, ca_pem) < 1) {
		rc = tfj_err_set(TFJ_EINVAL, "certificate: ca.crt holds no certificate");
		goto out;
	}
	if (!X509_STORE_CTX_init(ctx, st, x, NULL)) {
		rc = tfj_err_set(TFJ_ENOMEM, "certificate store");
		goto out;
	}
	vp = X509_STORE_CTX_get0_param(ctx);
	X509_VERIFY_PARAM_set_time(vp, (time_t)now_s);
	X509_VERIFY_PARAM_set_purpose(vp, X509_PURPOSE_SSL_SERVER);
	if (is_ip(name) ? !X509_VERIFY_PARAM_set1_ip_asc(vp, name)
			: !X509_VERIFY_PARAM_set1_host(vp, name, 0)) {
		rc = tfj_err_set(TFJ_EINVAL, "certificate: bad host name '%s'", name);
		goto out;
	}
	if (X509_verify_cert(ctx) != 1)
		rc = tfj_err_set(TFJ_EINVAL, "certificate: %s",
				 X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
out:
	ERR_clear_error();
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(st);
	X509_free(x);
	EVP_PKEY_free(k);
	return rc;
}
