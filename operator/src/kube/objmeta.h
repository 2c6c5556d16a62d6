/*
 * objmeta.h - reading the metadata of a Kubernetes API object (a parsed
 * cJSON tree, as the client, the informers and the caches hand them out).
 *
 * Pure: no I/O, no HTTP; the TFJob domain (tfjob/) uses it on the objects
 * it plans from without depending on the API client.
 *
 * Ownership: returned strings point into the object and live as long as it.
 */
#ifndef TFJ_OBJMETA_H
#define TFJ_OBJMETA_H

#include <cjson/cJSON.h>

/*
 * metadata.<key> of an API object as a string, or NULL when it is missing
 * or not a string. Points into obj.
 */
const char *tfj_objmeta_str(const cJSON *obj, const char *key);

/*
 * The object's controller reference: the first metadata.ownerReferences
 * entry whose `controller` is true (the API server allows one), or NULL.
 * Points into obj.
 */
const cJSON *tfj_objmeta_controller_ref(const cJSON *obj);

#endif
