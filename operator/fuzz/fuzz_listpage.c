/*
 * fuzz_listpage.c - a LIST response split and decoded item by item, as the
 * informer does (objdecode.h over jscan.h), on arbitrary bytes.
 *
 * Properties: no crash and no unbounded recursion whatever the nesting;
 * every item span lies inside the page; an item either decodes to an
 * object with a name or is rejected with a known reason; the page's
 * resourceVersion and continue token are NUL-terminated within their
 * buffers.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/err.h>

#include "kube/jscan.h"
#include "kube/objdecode.h"
#include "kube/objstore.h"

/* Small, so the size rejection is reached by small inputs too. */
#define OBJ_CAP 2048

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *page = (const char *)data;
	struct tfj_objdecode_page pg;
	struct tfj_jscan_span it;
	int rc, n = 0;

	if (tfj_objdecode_page(&pg, page, size) != 0)
		return 0;
	if (strnlen(pg.rv, sizeof(pg.rv)) >= sizeof(pg.rv) ||
	    strnlen(pg.cont, sizeof(pg.cont)) >= sizeof(pg.cont))
		abort();
	while ((rc = tfj_jscan_iter_next(&it, &pg.items)) == 1) {
		enum tfj_objdecode_reason why;
		char key[TFJ_OBJSTORE_KEY_MAX];
		cJSON *obj = NULL;

		/* "items": null iterates a static "[]", never reaching here. */
		if (it.p < page || it.p + it.n > page + size || it.n == 0)
			abort();
		if (tfj_objdecode_object(&obj, &why, it.p, it.n, OBJ_CAP) == 0) {
			if (!obj || why != TFJ_OBJDECODE_OK)
				abort();
			if (tfj_objstore_key(key, sizeof(key), obj) == 0 &&
			    strlen(key) >= sizeof(key))
				abort();
			cJSON_Delete(obj);
		} else {
			if (obj || why == TFJ_OBJDECODE_OK || why >= TFJ_OBJDECODE_NREASONS)
				abort();
			if (tfj_objdecode_key(key, sizeof(key), it) == 0 &&
			    strlen(key) >= sizeof(key))
				abort();
		}
		if (++n > 100000)
			abort(); /* every step consumes input */
	}
	return 0;
}
