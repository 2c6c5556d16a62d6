/*
 * poison.c - Failed/InvalidSpec for TFJobs the informer rejected.
 */
#include "app/poison.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tfj/buf.h>
#include <tfj/clock.h>
#include <tfj/err.h>
#include <tfj/json.h>
#include <tfj/log.h>

#include "kube/apipath.h"
#include "kube/jscan.h"
#include "kube/objdecode.h"
#include "kube/strmap.h"
#include "tfjob/jobstatus.h"
#include "tfjob/tfjob.h"

#define FIELD_MAX 256

/* What a pending write needs: the message, the version to update, the uid for the event. */
struct note {
	char msg[TFJ_JOBSTATUS_MESSAGE_MAX];
	char uid[FIELD_MAX];
	char rv[FIELD_MAX];
};

struct tfj_poison {
	struct tfj_kube *k;
	char manager[FIELD_MAX];     /* runPolicy.managedBy that means us */
	struct tfj_events *events;
	pthread_mutex_t mu;
	struct tfj_strmap pending;   /* key -> struct note */
	_Atomic uint64_t written;
};

int tfj_poison_new(struct tfj_poison **out, struct tfj_kube *k, struct tfj_events *events,
		   const char *manager)
{
	struct tfj_poison *p = calloc(1, sizeof(*p));

	*out = NULL;
	if (!p)
		return tfj_err_set(TFJ_ENOMEM, "poison");
	snprintf(p->manager, sizeof(p->manager), "%s",
		 manager && *manager ? manager : TFJ_TFJOB_MANAGER);
	p->k = k;
	p->events = events;
	pthread_mutex_init(&p->mu, NULL);
	*out = p;
	return 0;
}

void tfj_poison_free(struct tfj_poison *p)
{
	if (!p)
		return;
	tfj_strmap_free(&p->pending, free);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

uint64_t tfj_poison_written(const struct tfj_poison *p)
{
	return p ? atomic_load(&((struct tfj_poison *)p)->written) : 0;
}

/*
 * 1 when the job is not ours to write: its runPolicy.managedBy names
 * another controller, or cannot be read as a string (too long, another
 * type) and so may. Absent means the default manager, as in tfjob.h.
 */
static int foreign(const struct tfj_poison *p, struct tfj_jscan_span obj)
{
	static const char *const by_path[] = { "spec", "runPolicy", "managedBy", NULL };
	char by[FIELD_MAX];
	int rc = tfj_jscan_path_string(by, sizeof(by), obj, by_path);

	if (rc == TFJ_ENOTFOUND)
		return 0;
	return rc != 0 || (*by && strcmp(by, p->manager) != 0);
}

/*
 * Reads uid, resourceVersion and whether the job is to be left alone (it
 * ended, or another controller manages it) from an object's text.
 */
static int scan(const struct tfj_poison *p, struct note *n, int *ended,
		struct tfj_jscan_span obj)
{
	static const char *const phase_path[] = { "status", "phase", NULL };
	static const char *const uid_path[] = { "metadata", "uid", NULL };
	static const char *const rv_path[] = { "metadata", "resourceVersion", NULL };
	char phase[32];

	*ended = (tfj_jscan_path_string(phase, sizeof(phase), obj, phase_path) == 0 &&
		  (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0)) ||
		 foreign(p, obj);
	if (tfj_jscan_path_string(n->uid, sizeof(n->uid), obj, uid_path))
		n->uid[0] = '\0';
	return tfj_jscan_path_string(n->rv, sizeof(n->rv), obj, rv_path);
}

int tfj_poison_note(struct tfj_poison *p, const struct tfj_informer_reject *r)
{
	struct tfj_jscan_span obj = { r->text, r->len };
	struct note *n, *old = NULL;
	int rc, ended;

	if (!r->key)
		return 0;
	n = calloc(1, sizeof(*n));
	if (!n)
		return tfj_err_set(TFJ_ENOMEM, "poison note");
	/* Without a resourceVersion the write re-reads the object first. */
	if (scan(p, n, &ended, obj))
		n->rv[0] = '\0';
	if (ended) {
		/* It ended before it became undecodable (leave its record), or it
		 * is another controller's: nothing is written, not even an event. */
		free(n);
		return 0;
	}
	snprintf(n->msg, sizeof(n->msg),
		 "TFJob %s cannot be decoded by the operator (%s): %s; fix or delete it",
		 r->key, r->reason, r->detail);
	pthread_mutex_lock(&p->mu);
	rc = tfj_strmap_put(&p->pending, r->key, n, (void **)&old);
	pthread_mutex_unlock(&p->mu);
	free(old);
	if (rc) {
		free(n);
		return rc;
	}
	return 1;
}

int tfj_poison_status(cJSON **out, const char *ns, const char *name, const char *rv,
		      const char *msg, int64_t now)
{
	struct tfj_job_status *st = calloc(1, sizeof(*st));
	cJSON *root = cJSON_CreateObject(), *meta, *enc = NULL;
	int rc;

	*out = NULL;
	if (!st || !root) {
		rc = tfj_err_set(TFJ_ENOMEM, "poison status");
		goto out;
	}
	if ((rc = tfj_jobstatus_set(st, TFJ_COND_FAILED, 1, "InvalidSpec", msg, now)))
		goto out;
	st->completion_time = now;
	if ((rc = tfj_jobstatus_encode(&enc, st)))
		goto out;
	if (!cJSON_AddStringToObject(root, "apiVersion", TFJ_TFJOB_API_VERSION) ||
	    !cJSON_AddStringToObject(root, "kind", TFJ_TFJOB_KIND) ||
	    !(meta = cJSON_AddObjectToObject(root, "metadata")) ||
	    !cJSON_AddStringToObject(meta, "name", name) ||
	    !cJSON_AddStringToObject(meta, "namespace", ns) ||
	    !cJSON_AddStringToObject(meta, "resourceVersion", rv) ||
	    !cJSON_AddItemToObject(root, "status", enc)) {
		rc = tfj_err_set(TFJ_ENOMEM, "poison status");
		goto out;
	}
	enc = NULL;
	*out = root;
	root = NULL;
out:
	cJSON_Delete(enc);
	cJSON_Delete(root);
	free(st);
	return rc;
}

/* Takes key's note out of the pending set (the caller's), or NULL. */
static struct note *take(struct tfj_poison *p, const char *key)
{
	struct note *n;

	pthread_mutex_lock(&p->mu);
	n = tfj_strmap_del(&p->pending, key);
	pthread_mutex_unlock(&p->mu);
	return n;
}

/* Puts a note back after a failed write, unless a newer one came meanwhile. */
static void put_back(struct tfj_poison *p, const char *key, struct note *n)
{
	pthread_mutex_lock(&p->mu);
	if (tfj_strmap_has(&p->pending, key) || tfj_strmap_put(&p->pending, key, n, NULL))
		free(n);
	pthread_mutex_unlock(&p->mu);
}

/*
 * The stored object, read as text (it cannot be parsed whole) and scanned
 * into n. *ended is 1 when it finished meanwhile. TFJ_ENOTFOUND when gone.
 */
static int reread(struct tfj_poison *p, struct note *n, int *ended, const char *ns,
		  const char *name)
{
	char path[1024];
	struct tfj_buf body;
	struct tfj_jscan_span obj;
	int rc;

	if ((rc = tfj_apipath_obj(path, sizeof(path), TFJ_TFJOB_API_PATH, ns, "tfjobs", name,
				  NULL)))
		return rc;
	tfj_buf_init(&body, TFJ_OBJDECODE_MAX);
	rc = tfj_kube_do(p->k, TFJ_KUBE_GET, path, NULL, NULL, 0, &body, NULL);
	if (rc == 0) {
		obj.p = body.ptr ? body.ptr : "";
		obj.n = body.len;
		if ((rc = scan(p, n, ended, obj)))
			rc = tfj_err_set(TFJ_EPARSE, "TFJob %s/%s: no resourceVersion", ns, name);
	}
	tfj_buf_free(&body);
	return rc;
}

/* PUTs the Failed/InvalidSpec status at n->rv. */
static int put_status(struct tfj_poison *p, const struct note *n, const char *ns,
		      const char *name)
{
	char path[1024];
	cJSON *doc = NULL;
	int rc;

	if ((rc = tfj_apipath_obj(path, sizeof(path), TFJ_TFJOB_API_PATH, ns, "tfjobs", name,
				  "status")) ||
	    (rc = tfj_poison_status(&doc, ns, name, n->rv, n->msg, tfj_clock_unix_ms() / 1000)))
		return rc;
	rc = tfj_kube_replace(p->k, NULL, path, doc);
	cJSON_Delete(doc);
	return rc;
}

int tfj_poison_write(struct tfj_poison *p, const char *key, int *handled)
{
	char ns[FIELD_MAX];
	const char *slash = strchr(key, '/'), *name;
	struct note *n;
	int rc = 0, ended = 0;

	*handled = 0;
	if (!slash || (size_t)(slash - key) >= sizeof(ns) || !(n = take(p, key)))
		return 0;
	*handled = 1;
	memcpy(ns, key, (size_t)(slash - key));
	ns[slash - key] = '\0';
	name = slash + 1;
	/* The version noted may be stale (a conflict) or unreadable: read it again once. */
	if (!*n->rv)
		rc = reread(p, n, &ended, ns, name);
	if (rc == 0 && !ended) {
		rc = put_status(p, n, ns, name);
		if (rc == TFJ_ECONFLICT && (rc = reread(p, n, &ended, ns, name)) == 0 && !ended)
			rc = put_status(p, n, ns, name);
	}
	if (rc == TFJ_ENOTFOUND) {
		rc = 0; /* deleted meanwhile: nothing left to mark */
		ended = 1;
	}
	if (rc) {
		put_back(p, key, n);
		return rc;
	}
	if (!ended) {
		atomic_fetch_add(&p->written, 1);
		tfj_log_warn("undecodable TFJob marked Failed", "job", key, "reason", "InvalidSpec");
		if (p->events && *n->uid) {
			struct tfj_events_ref ref = { ns, name, n->uid };
			tfj_events_post(p->events, &ref, "Warning", "InvalidSpec", n->msg);
		}
	}
	free(n);
	return 0;
}
