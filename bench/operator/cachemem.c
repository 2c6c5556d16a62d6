/*
 * cachemem.c - tfj-bench-cachemem: where the operator's memory per cached
 * pod goes, measured without a cluster (docs/benchmarks.md, "Scale on the
 * kwok test bed", and docs/bench/history.md part 11).
 *
 * It feeds the scale benchmark's workload (N TFJobs of 1 ps + 4 workers) through the
 * operator's own transforms (app/slim.c) and caches (kube/objstore.c) and
 * reports, per pod:
 *
 *   cache     what the stores account for themselves (tfj_objstore_bytes,
 *             the figure /metrics shows), per kind of object: the pod, its
 *             Service, and its share of its TFJob and of the job's
 *             NetworkPolicy (one each per 5 pods here, where the scale
 *             run had 3.6 pods per job when its figures were taken);
 *   heap      what the allocator holds for them (tfj_heap_stats' bytes in use
 *             before and after), i.e. the accounting plus malloc's chunk
 *             headers and rounding and the hash maps' slots: for the pods
 *             and Services alone (heap_bytes_per_pod_cache_only, the
 *             figure of earlier runs) and for all four caches;
 *   busy      the same after a busy phase shaped like the scale run's: one
 *             thread per informer turning full API objects (a synthetic
 *             kwok pod as kube-apiserver returns it, managedFields
 *             included) into cached copies, each pod updated through
 *             Pending, Running and Succeeded, while --threads reconcile
 *             threads take copies of a job's pods and build and print pod
 *             bodies; then the anonymous resident memory (RssAnon), the
 *             allocator's free bytes, the busy phase's CPU seconds, and
 *             the figures again after tfj_heap_release() (malloc_trim).
 *
 * Usage: tfj-bench-cachemem [--jobs N] [--threads T] [--arenas A] [--no-trim]
 * (--arenas 0: glibc's default; the operator sets 2). Prints one JSON
 * object. It runs on the operator's allocator and its options (jemalloc,
 * TFJ_HEAPTRIM_MALLOC_CONF); tfj-bench-cachemem-glibc on glibc's. A
 * benchmark, not a test: nothing here can fail but the program.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <cjson/cJSON.h>

#include <tfj/heap.h>
#include <tfj/json.h>
#include <tfj/parse.h>

#include "app/heaptrim.h"
#include "app/slim.h"
#include "kube/objstore.h"
#include "tfjob/netpol.h"
#include "tfjob/podspec.h"
#include "tfjob/tfjob.h"

/* The operator's jemalloc options (app/main.c); unused on glibc. */
const char *malloc_conf = TFJ_HEAPTRIM_MALLOC_CONF;

#define NS "tfjob-scale-ours-1764300000"
#define MAX_JOBS 100000

/*
 * A worker pod of the scale run as kube-apiserver returns it once kwok has
 * taken it to Succeeded (the operator's labels, annotations and owner
 * reference; kwok's status; managedFields of the three writers). %1$s is
 * the job, %2$d the index, %3$d a number that varies per pod and event.
 */
static const char POD_FMT[] =
	"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s-worker-%d\","
	"\"namespace\":\"" NS "\",\"uid\":\"6f1c%04d-2b7e-4c1a-9d3e-%012d\","
	"\"resourceVersion\":\"%d\",\"creationTimestamp\":\"2026-11-28T11:38:12Z\","
	"\"labels\":{\"training.kubeflow.org/job-name\":\"%s\","
	"\"training.kubeflow.org/operator-name\":\"tfjob-controller\","
	"\"training.kubeflow.org/replica-index\":\"%d\","
	"\"training.kubeflow.org/replica-type\":\"worker\"},"
	"\"annotations\":{\"kwok.tfjob/exit-code\":\"0\",\"kwok.tfjob/run-for\":\"2s\"},"
	"\"ownerReferences\":[{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\","
	"\"name\":\"%s\",\"uid\":\"0b9e2a41-77c3-4d0e-8f5a-%012d\",\"controller\":true,"
	"\"blockOwnerDeletion\":true}],"
	"\"managedFields\":[{\"manager\":\"tfjob-operator\",\"operation\":\"Update\","
	"\"apiVersion\":\"v1\",\"time\":\"2026-11-28T11:38:12Z\",\"fieldsType\":\"FieldsV1\","
	"\"fieldsV1\":{\"f:metadata\":{\"f:annotations\":{\".\":{},\"f:kwok.tfjob/exit-code\":{},"
	"\"f:kwok.tfjob/run-for\":{}},\"f:labels\":{\".\":{},\"f:training.kubeflow.org/job-name\":{},"
	"\"f:training.kubeflow.org/operator-name\":{},\"f:training.kubeflow.org/replica-index\":{},"
	"\"f:training.kubeflow.org/replica-type\":{}},\"f:ownerReferences\":{\".\":{},"
	"\"k:{\\\"uid\\\":\\\"0b9e2a41\\\"}\":{}}},\"f:spec\":{\"f:containers\":{"
	"\"k:{\\\"name\\\":\\\"tensorflow\\\"}\":{\".\":{},\"f:env\":{\".\":{},"
	"\"k:{\\\"name\\\":\\\"TF_CONFIG\\\"}\":{\".\":{},\"f:name\":{},\"f:value\":{}}},"
	"\"f:image\":{},\"f:imagePullPolicy\":{},\"f:name\":{},\"f:ports\":{},\"f:resources\":{},"
	"\"f:terminationMessagePath\":{},\"f:terminationMessagePolicy\":{}}},\"f:dnsPolicy\":{},"
	"\"f:enableServiceLinks\":{},\"f:nodeSelector\":{},\"f:restartPolicy\":{},"
	"\"f:schedulerName\":{},\"f:securityContext\":{},\"f:terminationGracePeriodSeconds\":{},"
	"\"f:tolerations\":{}}}},{\"manager\":\"kwok\",\"operation\":\"Update\",\"apiVersion\":\"v1\","
	"\"time\":\"2026-11-28T11:38:16Z\",\"fieldsType\":\"FieldsV1\",\"subresource\":\"status\","
	"\"fieldsV1\":{\"f:status\":{\"f:conditions\":{},\"f:containerStatuses\":{},\"f:hostIP\":{},"
	"\"f:hostIPs\":{},\"f:phase\":{},\"f:podIP\":{},\"f:podIPs\":{},\"f:startTime\":{}}}}]},"
	"\"spec\":{\"containers\":[{\"name\":\"tensorflow\",\"image\":\"localhost/tfjob-bench:1\","
	"\"ports\":[{\"name\":\"tfjob-port\",\"containerPort\":2222,\"protocol\":\"TCP\"}],"
	"\"env\":[{\"name\":\"TF_CONFIG\",\"value\":\"{\\\"cluster\\\":{\\\"ps\\\":[\\\"%s-ps-0."
	NS ".svc:2222\\\"],\\\"worker\\\":[\\\"%s-worker-0." NS ".svc:2222\\\",\\\"%s-worker-1."
	NS ".svc:2222\\\",\\\"%s-worker-2." NS ".svc:2222\\\",\\\"%s-worker-3." NS
	".svc:2222\\\"]},\\\"task\\\":{\\\"type\\\":\\\"worker\\\",\\\"index\\\":%d},"
	"\\\"environment\\\":\\\"cloud\\\"}\"}],\"resources\":{},"
	"\"terminationMessagePath\":\"/dev/termination-log\","
	"\"terminationMessagePolicy\":\"File\",\"imagePullPolicy\":\"IfNotPresent\"}],"
	"\"restartPolicy\":\"OnFailure\",\"terminationGracePeriodSeconds\":30,"
	"\"dnsPolicy\":\"ClusterFirst\",\"nodeSelector\":{\"type\":\"kwok\"},"
	"\"serviceAccountName\":\"default\",\"serviceAccount\":\"default\","
	"\"nodeName\":\"kwok-node-%03d\",\"securityContext\":{},\"schedulerName\":\"default-scheduler\","
	"\"tolerations\":[{\"key\":\"kwok.x-k8s.io/node\",\"operator\":\"Equal\",\"value\":\"fake\","
	"\"effect\":\"NoSchedule\"},{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\","
	"\"effect\":\"NoExecute\",\"tolerationSeconds\":300},{\"key\":\"node.kubernetes.io/unreachable\","
	"\"operator\":\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":300}],"
	"\"priority\":0,\"enableServiceLinks\":true,\"preemptionPolicy\":\"PreemptLowerPriority\"},"
	"\"status\":{\"phase\":\"%s\",\"conditions\":["
	"{\"type\":\"Initialized\",\"status\":\"True\",\"lastProbeTime\":null,"
	"\"lastTransitionTime\":\"2026-11-28T11:38:14Z\"},"
	"{\"type\":\"Ready\",\"status\":\"False\",\"lastProbeTime\":null,"
	"\"lastTransitionTime\":\"2026-11-28T11:38:16Z\",\"reason\":\"PodCompleted\"},"
	"{\"type\":\"ContainersReady\",\"status\":\"False\",\"lastProbeTime\":null,"
	"\"lastTransitionTime\":\"2026-11-28T11:38:16Z\",\"reason\":\"PodCompleted\"},"
	"{\"type\":\"PodScheduled\",\"status\":\"True\",\"lastProbeTime\":null,"
	"\"lastTransitionTime\":\"2026-11-28T11:38:12Z\"}],"
	"\"hostIP\":\"10.0.0.7\",\"hostIPs\":[{\"ip\":\"10.0.0.7\"}],\"podIP\":\"10.0.3.17\","
	"\"podIPs\":[{\"ip\":\"10.0.3.17\"}],\"startTime\":\"2026-11-28T11:38:14Z\","
	"\"containerStatuses\":[{\"name\":\"tensorflow\",\"state\":{\"terminated\":{\"exitCode\":0,"
	"\"reason\":\"Completed\",\"startedAt\":\"2026-11-28T11:38:14Z\","
	"\"finishedAt\":\"2026-11-28T11:38:16Z\"}},\"lastState\":{},\"ready\":false,"
	"\"restartCount\":0,\"image\":\"localhost/tfjob-bench:1\",\"imageID\":\"\","
	"\"started\":false}]}}";

/* A Service of the run (one per pod), as kube-apiserver returns it. */
static const char SVC_FMT[] =
	"{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"%s-worker-%d\","
	"\"namespace\":\"" NS "\",\"uid\":\"9a3d%04d-6c2f-4e8b-a1d7-%012d\","
	"\"resourceVersion\":\"%d\",\"creationTimestamp\":\"2026-11-28T11:38:12Z\","
	"\"labels\":{\"training.kubeflow.org/job-name\":\"%s\","
	"\"training.kubeflow.org/operator-name\":\"tfjob-controller\","
	"\"training.kubeflow.org/replica-index\":\"%d\","
	"\"training.kubeflow.org/replica-type\":\"worker\"},"
	"\"ownerReferences\":[{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\","
	"\"name\":\"%s\",\"uid\":\"0b9e2a41-77c3-4d0e-8f5a-%012d\",\"controller\":true,"
	"\"blockOwnerDeletion\":true}],\"managedFields\":[{\"manager\":\"tfjob-operator\","
	"\"operation\":\"Update\",\"apiVersion\":\"v1\",\"time\":\"2026-11-28T11:38:12Z\","
	"\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{\"f:labels\":{}},"
	"\"f:spec\":{\"f:clusterIP\":{},\"f:ports\":{},\"f:selector\":{}}}}]},"
	"\"spec\":{\"ports\":[{\"name\":\"tfjob-port\",\"protocol\":\"TCP\",\"port\":2222,"
	"\"targetPort\":2222}],\"selector\":{\"training.kubeflow.org/job-name\":\"%s\","
	"\"training.kubeflow.org/replica-index\":\"%d\","
	"\"training.kubeflow.org/replica-type\":\"worker\"},\"clusterIP\":\"None\","
	"\"clusterIPs\":[\"None\"],\"type\":\"ClusterIP\",\"sessionAffinity\":\"None\","
	"\"ipFamilies\":[\"IPv4\"],\"ipFamilyPolicy\":\"SingleStack\","
	"\"internalTrafficPolicy\":\"Cluster\"},\"status\":{\"loadBalancer\":{}}}";

/*
 * A TFJob of the run (bench_scale.py's tfjob()) as kube-apiserver returns
 * it once the operator has written its Succeeded status. %1$s is the job,
 * %2$d a number that varies per job.
 */
static const char TFJOB_FMT[] =
	"{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\",\"metadata\":{\"name\":\"%1$s\","
	"\"namespace\":\"" NS "\",\"uid\":\"0b9e2a41-77c3-4d0e-8f5a-%2$012d\","
	"\"resourceVersion\":\"%2$d\",\"generation\":1,"
	"\"creationTimestamp\":\"2026-11-28T11:38:11Z\",\"managedFields\":[{\"manager\":"
	"\"python-urllib\",\"operation\":\"Update\",\"apiVersion\":\"kubeflow.org/v1\","
	"\"time\":\"2026-11-28T11:38:11Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":"
	"{\"f:spec\":{\".\":{},\"f:runPolicy\":{},\"f:tfReplicaSpecs\":{}}}},{\"manager\":"
	"\"tfjob-operator\",\"operation\":\"Update\",\"apiVersion\":\"kubeflow.org/v1\","
	"\"time\":\"2026-11-28T11:38:17Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":"
	"{\"f:status\":{\".\":{},\"f:completionTime\":{},\"f:conditions\":{},"
	"\"f:observedGeneration\":{},\"f:phase\":{},\"f:psSecretName\":{},"
	"\"f:replicaStatuses\":{},\"f:replicaSummary\":{},\"f:startTime\":{}}},"
	"\"subresource\":\"status\"}]},"
	"\"spec\":{\"runPolicy\":{\"cleanPodPolicy\":\"Running\","
	"\"managedBy\":\"tfjob-bench.example.com/operator\"},\"tfReplicaSpecs\":{"
	"\"PS\":{\"replicas\":1,\"restartPolicy\":\"Never\",\"template\":{\"metadata\":"
	"{\"annotations\":{}},\"spec\":{\"nodeSelector\":{\"type\":\"kwok\"},\"tolerations\":"
	"[{\"key\":\"kwok.x-k8s.io/node\",\"operator\":\"Equal\",\"value\":\"fake\","
	"\"effect\":\"NoSchedule\"}],\"containers\":[{\"name\":\"tensorflow\","
	"\"image\":\"localhost/tfjob-bench:1\"}]}}},"
	"\"Worker\":{\"replicas\":4,\"restartPolicy\":\"OnFailure\",\"template\":{\"metadata\":"
	"{\"annotations\":{\"kwok.tfjob/exit-code\":\"0\",\"kwok.tfjob/run-for\":\"2s\"}},"
	"\"spec\":{\"nodeSelector\":{\"type\":\"kwok\"},\"tolerations\":[{\"key\":"
	"\"kwok.x-k8s.io/node\",\"operator\":\"Equal\",\"value\":\"fake\",\"effect\":"
	"\"NoSchedule\"}],\"containers\":[{\"name\":\"tensorflow\","
	"\"image\":\"localhost/tfjob-bench:1\"}]}}}}},"
	"\"status\":{\"conditions\":[{\"type\":\"Created\",\"status\":\"True\","
	"\"reason\":\"TFJobCreated\",\"message\":\"TFJob %1$s is created.\","
	"\"lastUpdateTime\":\"2026-11-28T11:38:12Z\",\"lastTransitionTime\":"
	"\"2026-11-28T11:38:12Z\"},{\"type\":\"Running\",\"status\":\"False\","
	"\"reason\":\"TFJobRunning\",\"message\":\"TFJob %1$s is running.\","
	"\"lastUpdateTime\":\"2026-11-28T11:38:17Z\",\"lastTransitionTime\":"
	"\"2026-11-28T11:38:17Z\"},{\"type\":\"Succeeded\",\"status\":\"True\","
	"\"reason\":\"TFJobSucceeded\",\"message\":\"TFJob %1$s successfully completed.\","
	"\"lastUpdateTime\":\"2026-11-28T11:38:17Z\",\"lastTransitionTime\":"
	"\"2026-11-28T11:38:17Z\"}],\"replicaStatuses\":{\"PS\":{\"active\":0,\"succeeded\":1,"
	"\"failed\":0,\"restarts\":0},\"Worker\":{\"active\":0,\"succeeded\":4,\"failed\":0,"
	"\"restarts\":0}},\"startTime\":\"2026-11-28T11:38:12Z\",\"completionTime\":"
	"\"2026-11-28T11:38:17Z\",\"phase\":\"Succeeded\",\"replicaSummary\":"
	"\"ps 1/1 worker 4/4\",\"observedGeneration\":1,\"psSecretName\":\"%1$s-ps-%2$08d\"}}";

struct opts {
	int jobs, threads, arenas, trim;
};

struct shared {
	const struct opts *o;
	struct tfj_objstore *pods, *svcs;
	int next;                 /* next job a reconcile thread takes */
	pthread_mutex_t mu;
};

/* A pod (phase set) or a Service (phase NULL) of job's replica idx, parsed. */
static cJSON *build(const char *job, int idx, int n, const char *phase)
{
	char text[16384];
	int len;

	if (phase)
		len = snprintf(text, sizeof(text), POD_FMT, job, idx, idx, n, n, job, idx, job, n, job,
			       job, job, job, job, idx, n % 200, phase);
	else
		len = snprintf(text, sizeof(text), SVC_FMT, job, idx, idx, n, n, job, idx, job, n,
			       job, idx);
	if (len < 0 || (size_t)len >= sizeof(text))
		return NULL;
	return cJSON_Parse(text);
}

/* Caches obj's slimmed copy under its key; frees obj. */
static void cache(struct tfj_objstore *s, cJSON *obj, cJSON *(*slim)(const cJSON *))
{
	struct tfj_objstore_entry *prev = NULL;
	char key[TFJ_OBJSTORE_KEY_MAX];
	cJSON *c = obj ? slim(obj) : NULL;

	if (c && tfj_objstore_key(key, sizeof(key), c) == 0 &&
	    tfj_objstore_put(&prev, s, key, c) == 0)
		tfj_objstore_entry_free(prev);
	cJSON_Delete(c);
	cJSON_Delete(obj);
}

static void job_name(char *out, size_t len, int j)
{
	snprintf(out, len, "job-%05d", j);
}

/* Job j's TFJob, parsed (NULL when out of memory). */
static cJSON *build_job(const char *job, int n)
{
	char text[16384];
	int len = snprintf(text, sizeof(text), TFJOB_FMT, job, n);

	if (len < 0 || (size_t)len >= sizeof(text))
		return NULL;
	return cJSON_Parse(text);
}

/*
 * The job's NetworkPolicy as kube-apiserver returns it: the operator's own
 * body (tfj_netpol_body) with the server's metadata and managedFields.
 */
static cJSON *build_netpol(const cJSON *jobobj, int n)
{
	static const char mf[] =
		"[{\"manager\":\"tfjob-operator\",\"operation\":\"Update\",\"apiVersion\":"
		"\"networking.k8s.io/v1\",\"time\":\"2026-11-28T11:38:12Z\",\"fieldsType\":"
		"\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{\"f:labels\":{},\"f:ownerReferences\":"
		"{}},\"f:spec\":{\"f:ingress\":{},\"f:podSelector\":{},\"f:policyTypes\":{}}}}]";
	struct tfj_tfjob job;
	cJSON *np = NULL, *meta;
	char uid[64], rv[32];

	memset(&job, 0, sizeof(job));
	if (tfj_tfjob_from_json(&job, jobobj) || tfj_netpol_body(&np, &job, NULL))
		goto out;
	snprintf(uid, sizeof(uid), "5d2e7c10-3b4a-4f6e-9c8d-%012d", n);
	snprintf(rv, sizeof(rv), "%d", n + 1);
	meta = cJSON_GetObjectItemCaseSensitive(np, "metadata");
	if (!cJSON_AddStringToObject(meta, "uid", uid) ||
	    !cJSON_AddStringToObject(meta, "resourceVersion", rv) ||
	    !cJSON_AddNumberToObject(meta, "generation", 1) ||
	    !cJSON_AddStringToObject(meta, "creationTimestamp", "2026-11-28T11:38:12Z") ||
	    !cJSON_AddItemToObject(meta, "managedFields", cJSON_Parse(mf))) {
		cJSON_Delete(np);
		np = NULL;
	}
out:
	tfj_tfjob_free(&job);
	return np;
}

/* Every pod of job j through the phases an informer sees. */
static void pod_events(struct tfj_objstore *s, int j)
{
	static const char *const phases[] = { "Pending", "Running", "Succeeded" };
	char job[32];

	job_name(job, sizeof(job), j);
	for (int p = 0; p < 3; p++)
		for (int i = 0; i < 5; i++)
			cache(s, build(job, i, j * 100 + p * 10 + i, phases[p]),
			      tfj_slim_pod);
}

/* Job 0's objects through the four transforms, nothing kept. */
static void warm_up(void)
{
	cJSON *j = build_job("job-warm", 1), *objs[3], *c;

	objs[0] = j ? build_netpol(j, 2) : NULL;
	objs[1] = build("job-warm", 0, 3, "Running");
	objs[2] = build("job-warm", 0, 4, NULL);
	cJSON_Delete(j ? tfj_slim_tfjob(j) : NULL);
	for (int i = 0; i < 3; i++) {
		c = !objs[i] ? NULL : i == 0 ? tfj_slim_netpol(objs[i])
		  : i == 1 ? tfj_slim_pod(objs[i]) : tfj_slim_service(objs[i]);
		cJSON_Delete(c);
		cJSON_Delete(objs[i]);
	}
	cJSON_Delete(j);
}

static void *pod_informer(void *arg)
{
	struct shared *sh = arg;

	for (int j = 0; j < sh->o->jobs; j++)
		pod_events(sh->pods, j);
	return NULL;
}

static void *svc_informer(void *arg)
{
	struct shared *sh = arg;
	char job[32];

	for (int j = 0; j < sh->o->jobs; j++) {
		job_name(job, sizeof(job), j);
		for (int i = 0; i < 5; i++)
			cache(sh->svcs, build(job, i, j * 100 + i, NULL), tfj_slim_service);
	}
	return NULL;
}

/*
 * A reconcile as far as memory goes: copies of the job's pods and services
 * from the caches, and a pod body built and printed for each replica.
 */
static void *reconciler(void *arg)
{
	struct shared *sh = arg;
	char job[32];

	for (;;) {
		cJSON **p = NULL, **s = NULL;
		size_t np = 0, ns = 0;
		int j;

		pthread_mutex_lock(&sh->mu);
		j = sh->next < sh->o->jobs * 3 ? sh->next++ : -1;
		pthread_mutex_unlock(&sh->mu);
		if (j < 0)
			return NULL;
		job_name(job, sizeof(job), j % sh->o->jobs);
		tfj_objstore_select(&p, &np, sh->pods, NS, job);
		tfj_objstore_select(&s, &ns, sh->svcs, NS, job);
		for (int i = 0; i < 5; i++) {
			cJSON *body = build(job, i, j, "Pending");
			char *text = NULL;

			if (body && tfj_json_print(&text, body) == 0)
				free(text);
			cJSON_Delete(body);
		}
		tfj_objstore_free_list(p, np);
		tfj_objstore_free_list(s, ns);
	}
}

static long status_kib(const char *field)
{
	char line[256];
	size_t fl = strlen(field);
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, field, fl) && line[fl] == ':')
			v = strtol(line + fl + 1, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

struct snap {
	long anon_kib;
	size_t used, free_b;
};

/* The heap's figures are 0 where the allocator has none (tfj/heap.h). */
static struct snap snap(void)
{
	struct tfj_heap_stats hs;
	struct snap s;

	(void)tfj_heap_stats(&hs);
	s.anon_kib = status_kib("RssAnon");
	s.used = hs.in_use;
	s.free_b = hs.free;
	return s;
}

/* User plus system CPU seconds of the process so far. */
static double cpu_s(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int parse_args(struct opts *o, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		int *dst = !strcmp(argv[i], "--jobs") ? &o->jobs
			 : !strcmp(argv[i], "--threads") ? &o->threads
			 : !strcmp(argv[i], "--arenas") ? &o->arenas : NULL;

		if (!strcmp(argv[i], "--no-trim")) {
			o->trim = 0;
			continue;
		}
		if (!dst || i + 1 >= argc || tfj_parse_int(dst, argv[i + 1], 0, MAX_JOBS, argv[i])) {
			fprintf(stderr, "usage: tfj-bench-cachemem [--jobs N] [--threads T] "
					"[--arenas A] [--no-trim]\n");
			return 2;
		}
		i++;
	}
	return o->jobs > 0 && o->threads > 0 ? 0 : 2;
}

int main(int argc, char **argv)
{
	struct opts o = { 300, 4, 2, 1 };
	struct shared sh = { &o, NULL, NULL, 0, PTHREAD_MUTEX_INITIALIZER };
	struct tfj_objstore *cp = NULL, *cs = NULL, *cj = NULL, *cn = NULL;
	pthread_t inf[2], *rec;
	struct snap s0, s1, s1all, s2, s3, s4;
	size_t pods, cache_pod, cache_svc, cache_job, cache_np;
	double busy_cpu;

	if (parse_args(&o, argc, argv))
		return 2;
	/* glibc's arenas; jemalloc's come from malloc_conf, as the operator's. */
	tfj_heap_limit_arenas(o.arenas);
	pods = (size_t)o.jobs * 5;

	/* 1. The caches alone, on one thread: the pods' final state and their services. */
	tfj_objstore_new(&cp, TFJ_LABEL_JOB_NAME);
	tfj_objstore_new(&cs, TFJ_LABEL_JOB_NAME);
	/*
	 * One job's objects through the transforms first, and thrown away:
	 * what libraries set up once on first use (OpenSSL's digests, which
	 * the operator's TLS set up long before) is not a cost per pod.
	 */
	warm_up();
	tfj_heap_release();
	s0 = snap();
	for (int j = 0; j < o.jobs; j++) {
		char job[32];

		job_name(job, sizeof(job), j);
		for (int i = 0; i < 5; i++) {
			cache(cp, build(job, i, j * 100 + i, "Succeeded"), tfj_slim_pod);
			cache(cs, build(job, i, j * 100 + i, NULL), tfj_slim_service);
		}
	}
	tfj_heap_release();
	s1 = snap();
	/* Then each job's TFJob and NetworkPolicy, the other two caches. */
	tfj_objstore_new(&cj, NULL);
	tfj_objstore_new(&cn, TFJ_LABEL_JOB_NAME);
	for (int j = 0; j < o.jobs; j++) {
		char job[32];
		cJSON *jo;

		job_name(job, sizeof(job), j);
		jo = build_job(job, j * 100 + 50);
		if (jo)
			cache(cn, build_netpol(jo, j * 100 + 51), tfj_slim_netpol);
		cache(cj, jo, tfj_slim_tfjob);
	}
	tfj_heap_release();
	s1all = snap();
	cache_pod = tfj_objstore_bytes(cp);
	cache_svc = tfj_objstore_bytes(cs);
	cache_job = tfj_objstore_bytes(cj);
	cache_np = tfj_objstore_bytes(cn);
	tfj_objstore_free(cp);
	tfj_objstore_free(cs);
	tfj_objstore_free(cj);
	tfj_objstore_free(cn);
	tfj_heap_release();

	/* 2. The busy phase: informer threads and reconcile threads at once. */
	tfj_objstore_new(&sh.pods, TFJ_LABEL_JOB_NAME);
	tfj_objstore_new(&sh.svcs, TFJ_LABEL_JOB_NAME);
	rec = calloc((size_t)o.threads, sizeof(*rec));
	if (!rec)
		return 1;
	s2 = snap();
	busy_cpu = cpu_s();
	pthread_create(&inf[0], NULL, pod_informer, &sh);
	pthread_create(&inf[1], NULL, svc_informer, &sh);
	for (int i = 0; i < o.threads; i++)
		pthread_create(&rec[i], NULL, reconciler, &sh);
	for (int i = 0; i < 2; i++)
		pthread_join(inf[i], NULL);
	for (int i = 0; i < o.threads; i++)
		pthread_join(rec[i], NULL);
	busy_cpu = cpu_s() - busy_cpu;
	s3 = snap();
	if (o.trim)
		tfj_heap_release();
	s4 = snap();

	printf("{\"allocator\": \"%s\", \"jobs\": %d, \"pods\": %zu, \"threads\": %d,"
	       " \"arenas\": %d,\n"
	       " \"cache_bytes_per_pod\": {\"pod\": %.0f, \"service\": %.0f, \"tfjob\": %.0f,"
	       " \"netpol\": %.0f, \"all\": %.0f},\n"
	       " \"heap_bytes_per_pod_cache_only\": %.0f, \"heap_bytes_per_pod_all_caches\": %.0f,\n"
	       " \"busy\": {\"cpu_s\": %.2f, \"anon_bytes_per_pod\": %.0f,"
	       " \"heap_used_per_pod\": %.0f, \"heap_free_kib\": %zu},\n"
	       " \"after_trim\": {\"trimmed\": %d, \"anon_bytes_per_pod\": %.0f,"
	       " \"heap_used_per_pod\": %.0f, \"heap_free_kib\": %zu},"
	       " \"peak_rss_kib\": %ld}\n",
	       tfj_heap_name(), o.jobs, pods, o.threads, o.arenas, (double)cache_pod / (double)pods,
	       (double)cache_svc / (double)pods, (double)cache_job / (double)pods,
	       (double)cache_np / (double)pods,
	       (double)(cache_pod + cache_svc + cache_job + cache_np) / (double)pods,
	       (double)(s1.used - s0.used) / (double)pods, (double)(s1all.used - s0.used) / (double)pods,
	       busy_cpu, (double)(s3.anon_kib - s2.anon_kib) * 1024.0 / (double)pods,
	       (double)(s3.used - s2.used) / (double)pods, s3.free_b >> 10, o.trim,
	       (double)(s4.anon_kib - s2.anon_kib) * 1024.0 / (double)pods,
	       (double)(s4.used - s2.used) / (double)pods, s4.free_b >> 10, status_kib("VmHWM"));
	tfj_objstore_free(sh.pods);
	tfj_objstore_free(sh.svcs);
	free(rec);
	return 0;
}
