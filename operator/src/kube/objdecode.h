/*
 * objdecode.h - API objects decoded one by one, with a reason for each
 * object that cannot be.
 *
 * A LIST page is split into its items (jscan.h) and each item is parsed on
 * its own, so an item that is too deep, too large or of the wrong shape is
 * rejected alone while the rest of the page is used. The same decoder runs
 * on the object of every watch event (watch.c).
 *
 * Size bounds (issue 14). etcd refuses requests over 1.5 MiB
 * (--max-request-bytes), so no stored object is larger; its JSON from the
 * API server can be somewhat larger than what etcd holds (built-in kinds are
 * stored as protobuf), hence the per-object cap of twice that,
 * TFJ_OBJDECODE_MAX = 3 MiB. The informers ask for LIST pages of
 * TFJ_OBJDECODE_PAGE_SIZE = 20 objects: 20 x 3 MiB = 60 MiB, under the
 * client's 64 MiB response cap (TFJ_KUBE_MAX_BODY_DEFAULT) with room for
 * the list envelope, so a page of the largest objects the API server
 * accepts always arrives whole. objdecode.c checks this at compile time.
 *
 * Ownership: decoded trees are the caller's (cJSON_Delete).
 */
#ifndef TFJ_OBJDECODE_H
#define TFJ_OBJDECODE_H

#include <stddef.h>
#include <cjson/cJSON.h>

#include "kube/jscan.h"

#define TFJ_OBJDECODE_MAX (3u << 20)
#define TFJ_OBJDECODE_PAGE_SIZE 20

/* Why an object was rejected; the metric's reason label. */
enum tfj_objdecode_reason {
	TFJ_OBJDECODE_OK = 0,
	TFJ_OBJDECODE_DEPTH,   /* nested deeper than TFJ_JSON_MAX_DEPTH */
	TFJ_OBJDECODE_SIZE,    /* larger than the cap */
	TFJ_OBJDECODE_SYNTAX,  /* not JSON */
	TFJ_OBJDECODE_TYPE,    /* not an object, or metadata of the wrong types */
	TFJ_OBJDECODE_NREASONS
};

/* "depth", "size", "syntax", "type" ("ok" for TFJ_OBJDECODE_OK). */
const char *tfj_objdecode_reason_name(enum tfj_objdecode_reason r);

/*
 * Decodes one object from its span: JSON within max bytes and
 * TFJ_JSON_MAX_DEPTH, an object whose metadata is an object with a
 * non-empty string name and, when present, string namespace and
 * resourceVersion. *out gets the tree, *why TFJ_OBJDECODE_OK; on failure
 * *out is NULL, *why the reason and the error detail says more.
 */
int tfj_objdecode_object(cJSON **out, enum tfj_objdecode_reason *why, const char *text,
			 size_t len, size_t max);

/*
 * The cache key ("ns/name", or "name" when cluster-scoped) of an object
 * read with the scanner only, for objects that could not be decoded.
 * TFJ_ENOTFOUND/TFJ_ETYPE/TFJ_EPARSE when the name cannot be read.
 */
int tfj_objdecode_key(char *out, size_t outlen, struct tfj_jscan_span obj);

/* A LIST response split into its parts. */
struct tfj_objdecode_page {
	char rv[128];                  /* metadata.resourceVersion */
	char cont[1024];               /* metadata.continue, "" on the last page */
	struct tfj_jscan_iter items;   /* over the items (empty for "items": null) */
};

/*
 * Splits a LIST body. Fails (TFJ_EPARSE, TFJ_ETOOBIG for an over-long
 * resourceVersion or continue token) only when the page itself is broken:
 * the items are not looked into.
 */
int tfj_objdecode_page(struct tfj_objdecode_page *pg, const char *body, size_t len);

#endif
