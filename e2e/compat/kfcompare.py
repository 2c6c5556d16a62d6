#!/usr/bin/env python3
"""kfcompare - the pods and services of a TFJob against Kubeflow's.

    kfcompare.py --namespace NS --job NAME [--wait SECONDS] [--strict]
    kfcompare.py --self-test      (the model against Kubeflow's unit tests)

Reads the TFJob as the API server holds it, writes down the pods and
headless services Kubeflow's training-operator v1.9 makes for it (its rules,
each with the source line it comes from, below), waits until our operator
has made as many, and compares name, labels, annotations, ownerReferences,
restartPolicy, priorityClassName, containers (image, command, args), the
`tensorflow` container's ports and env (TF_CONFIG compared as JSON), the
volumes, and the services' type, labels, selector and ports.

Where we differ on purpose (docs/compatibility.md, the row is named), the
expectation is adjusted in one place, `deliberate()`, and said so.

Sources: github.com/kubeflow/training-operator v1.9.3 (Go module proxy),
paths below relative to its pkg/. Exit 0: equal; 1: differences (listed);
2: usage or kubectl failure. Python standard library only.
"""
import argparse
import copy
import json
import subprocess
import sys
import time

# ---- Kubeflow v1.9's rules -------------------------------------------------

# apis/kubeflow.org/v1/tensorflow_types.go / common_types.go
KF_TYPES = ["Chief", "Evaluator", "Master", "PS", "Worker"]
PORT_NAME, PORT = "tfjob-port", 2222                # tensorflow_types.go TFJobDefaultPort*
CONTAINER = "tensorflow"                              # TFJobDefaultContainerName
OPERATOR_NAME = "tfjob-controller"                    # tensorflow/tfjob_controller.go L61
LBL = "training.kubeflow.org/"
REPORT_ENV = {"TFJOB_REPORT_ADDR", "TFJOB_REPORT_TOKEN_FILE", "TFJOB_JOB_NAMESPACE",
              "TFJOB_JOB_NAME", "TFJOB_JOB_UID", "TFJOB_REPLICA_TYPE",
              "TFJOB_REPLICA_INDEX", "POD_NAME", "TFJOB_REPORT_CA_FILE",
              "TFJOB_REPORT_INSECURE"}
REPORT_VOLUME = "tfjob-report-token"
# Row "Per-job ps secret": the env vars (the secret's file, the directory of
# the job's ps TLS certificate) and the volume are additive.
PS_SECRET_ENV = ("TFJOB_PS_SECRET_FILE", "TFJOB_PS_TLS_DIR")
PS_SECRET_VOLUME = "tfjob-ps-secret"


def defaulted(job):
    """SetDefaults_TFJob (apis/kubeflow.org/v1/tensorflow_defaults.go L49-71),
    applied in memory on every reconcile (tensorflow/tfjob_controller.go)."""
    job = copy.deepcopy(job)
    specs = {}
    for key, rs in job["spec"]["tfReplicaSpecs"].items():
        # L35-47: keys camel-cased in any case (defaulting_utils.go L48-59)
        key = next((t for t in KF_TYPES if t.lower() == key.lower()), key)
        rs.setdefault("replicas", 1)                   # L66 setDefaultReplicas
        if not rs.get("restartPolicy"):
            rs["restartPolicy"] = "Never"              # L68, TFJobDefaultRestartPolicy
        pod = rs["template"].setdefault("spec", {})
        ctrs = pod["containers"]
        # defaulting_utils.go L10-34: the tensorflow container (or container 0)
        # gets {tfjob-port, 2222} appended unless it has a port of that name.
        i = next((k for k, c in enumerate(ctrs) if c.get("name") == CONTAINER), 0)
        ports = ctrs[i].setdefault("ports", [])
        if not any(p.get("name") == PORT_NAME for p in ports):
            ports.append({"name": PORT_NAME, "containerPort": PORT})
        specs[key] = rs
    job["spec"]["tfReplicaSpecs"] = specs
    return job


def tf_port(rs):
    """tensorflow/util.go L23-37 GetPortFromTFJob."""
    for c in rs["template"]["spec"]["containers"]:
        if c.get("name") == CONTAINER:
            for p in c.get("ports", []):
                if p.get("name") == PORT_NAME:
                    return p["containerPort"]
    return PORT


def cluster_spec(job):
    """tensorflow/tensorflow.go L156-188 genClusterSpec: every replica type,
    the evaluator included; host <job>-<type>-<i>.<ns>.svc:<port>
    (CUSTOM_CLUSTER_DOMAIN unset)."""
    name, ns = job["metadata"]["name"], job["metadata"]["namespace"]
    cluster = {}
    for key, rs in job["spec"]["tfReplicaSpecs"].items():
        rt = key.lower()
        cluster[rt] = ["%s-%s-%d.%s.svc:%d" % (name, rt, i, ns, tf_port(rs))
                       for i in range(rs["replicas"])]
    return cluster


def tf_config(job, rt, index):
    """tensorflow/tensorflow.go L112-154 genTFConfigJSONStr; None when the
    job is not distributed (tensorflow/util.go L74-95 isDistributed: one
    replica in all; tfjob_controller.go L561-564)."""
    if sum(rs["replicas"] for rs in job["spec"]["tfReplicaSpecs"].values()) == 1:
        return None
    cluster = cluster_spec(job)
    task = {"type": rt, "index": index}
    if job["spec"].get("enableDynamicWorker"):
        # L61-83 convertClusterSpecToSparseClusterSpec, L125-134
        sparse = {"worker": {}, "ps": []}
        if rt == "ps":
            sparse["ps"] = [cluster["ps"][index]]
        elif rt == "worker":
            sparse["ps"] = cluster.get("ps")           # nil slice -> null
            sparse["worker"] = {str(index): cluster["worker"][index]}
        return {"cluster": sparse, "task": task}
    return {"cluster": cluster, "task": task, "environment": "cloud"}


def master_role(job, key, index):
    """tensorflow/tfjob_controller.go L598-605 IsMasterRole."""
    specs = job["spec"]["tfReplicaSpecs"]
    if "Chief" in specs or "Master" in specs:
        return key in ("Chief", "Master")
    return key == "Worker" and index == 0


def owner(job):
    """common/job_controller.go L222-234 GenOwnerReference."""
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "name": job["metadata"]["name"], "uid": job["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}


def base_labels(job, rt, index):
    """common/job_controller.go L236-242 GenLabels, then replica type and
    index (common/pod.go L401-404, common/service.go L219-222)."""
    return {LBL + "operator-name": OPERATOR_NAME,
            LBL + "job-name": job["metadata"]["name"].replace("/", "-"),
            LBL + "replica-type": rt, LBL + "replica-index": str(index)}


def api_port(p):
    """A container port as the API server stores it (protocol defaults to TCP)."""
    q = dict(p)
    q.setdefault("protocol", "TCP")
    return q


def kubeflow_objects(job):
    """The pods and services (name -> object) Kubeflow v1.9 makes."""
    pods, svcs = {}, {}
    for key, rs in job["spec"]["tfReplicaSpecs"].items():
        rt = key.lower()
        for i in range(rs["replicas"]):
            name = "%s-%s-%d" % (job["metadata"]["name"], rt, i)  # common/util.go GenGeneralName
            tmpl = copy.deepcopy(rs["template"])
            meta = tmpl.get("metadata") or {}
            labels = dict(meta.get("labels") or {})
            labels.update(base_labels(job, rt, i))     # common/pod.go L417-422: ours win
            if master_role(job, key, i):
                labels[LBL + "job-role"] = "master"     # common/pod.go L406-408
            spec = tmpl["spec"]
            tfc = tf_config(job, rt, i)
            for c in spec["containers"]:
                c["ports"] = [api_port(p) for p in c.get("ports", [])]
            for c in spec["containers"]:
                if c.get("name") == CONTAINER and tfc is not None:
                    # tfjob_controller.go L575-586: appended to the first
                    # tensorflow container's env.
                    c.setdefault("env", []).append({"name": "TF_CONFIG", "value": tfc})
                    break
            # core/pod.go L81-88 SetRestartPolicy (common/pod.go L435): ExitCode -> Never
            restart = "Never" if rs["restartPolicy"] == "ExitCode" else rs["restartPolicy"]
            pods[name] = {
                "name": name, "labels": labels,
                "annotations": dict(meta.get("annotations") or {}),  # control/pod_control.go L120-138
                "ownerReferences": [owner(job)], "restartPolicy": restart,
                # no priorityClassName: schedulingPolicy is the PodGroup's
                # (common/job.go L250-335); only the template's own.
                "priorityClassName": spec.get("priorityClassName"),
                "containers": spec["containers"],
                "volumes": spec.get("volumes", []),
            }
            # common/service.go L210-273, core/service.go L83-101: every port of
            # the tensorflow container as {name, port} (protocol TCP and
            # targetPort = port by API defaulting); labels = selector.
            ports = []
            for c in spec["containers"]:
                if c.get("name") == CONTAINER:
                    ports = [{"name": p.get("name", ""), "port": p["containerPort"],
                              "protocol": "TCP", "targetPort": p["containerPort"]}
                             for p in c.get("ports", [])]
                    break
            svcs[name] = {"name": name, "labels": base_labels(job, rt, i),
                          "ownerReferences": [owner(job)], "clusterIP": "None",
                          "selector": base_labels(job, rt, i),
                          "ports": sorted(ports, key=lambda p: p["name"])}
    return pods, svcs


# ---- where we differ on purpose (docs/compatibility.md) ---------------------

def deliberate(job, pods, svcs):
    """Adjusts Kubeflow's expectation by our deliberate differences."""
    for name, pod in pods.items():
        rt = pod["labels"][LBL + "replica-type"]
        for c in pod["containers"]:
            for e in c.get("env", []):
                if e["name"] != "TF_CONFIG" or not isinstance(e["value"], dict):
                    continue
                cl = e["value"]["cluster"]
                if job["spec"].get("enableDynamicWorker"):
                    # Row "enableDynamicWorker": "ps" is [] where Kubeflow
                    # writes null (TensorFlow refuses null); a ps sees every ps.
                    if cl["ps"] is None:
                        cl["ps"] = []
                    if rt == "ps":
                        cl["ps"] = cluster_spec(job)["ps"]
                elif rt != "evaluator":
                    # Row "Evaluator in TF_CONFIG": training tasks do not see it.
                    cl.pop("evaluator", None)
    for svc in svcs.values():
        # Row "Service selector": no operator-name in the selector.
        svc["selector"].pop(LBL + "operator-name")


# ---- what our operator made -------------------------------------------------

def kubectl(*args):
    try:
        out = subprocess.run(["kubectl"] + list(args), check=True, capture_output=True,
                             text=True, timeout=60).stdout
    except (subprocess.SubprocessError, OSError) as e:
        err = getattr(e, "stderr", "") or str(e)
        sys.exit("kfcompare: kubectl %s: %s" % (" ".join(args), err.strip()))
    return json.loads(out)


def children(ns, job, kind):
    sel = "%sjob-name=%s" % (LBL, job)
    items = kubectl("-n", ns, "get", kind, "-l", sel, "-o", "json")["items"]
    return {o["metadata"]["name"]: o for o in items}


def actual_pod(o):
    spec, meta = o["spec"], o["metadata"]
    ctrs = []
    for c in spec["containers"]:
        c = {k: v for k, v in c.items()
             if k in ("name", "image", "command", "args", "ports", "env")}
        # Row "Report channel": its env vars are additive; compare the rest.
        env = [e for e in c.get("env", [])
               if e["name"] not in REPORT_ENV and e["name"] not in PS_SECRET_ENV]
        c.pop("env", None)
        if env:
            c["env"] = env
        ctrs.append(c)
    return {"name": meta["name"], "labels": meta.get("labels", {}),
            "annotations": meta.get("annotations", {}),
            "ownerReferences": meta.get("ownerReferences", []),
            "restartPolicy": spec.get("restartPolicy"),
            "priorityClassName": spec.get("priorityClassName"),
            "containers": ctrs,
            "volumes": [v for v in spec.get("volumes", [])
                        if v["name"] not in (REPORT_VOLUME, PS_SECRET_VOLUME) and
                        not v["name"].startswith("kube-api-access-")]}


def expected_pod_view(p):
    ctrs = []
    for c in p["containers"]:
        ctrs.append({k: v for k, v in c.items()
                     if k in ("name", "image", "command", "args", "ports", "env")})
    q = dict(p, containers=ctrs)
    return q


def actual_svc(o):
    spec, meta = o["spec"], o["metadata"]
    return {"name": meta["name"], "labels": meta.get("labels", {}),
            "ownerReferences": meta.get("ownerReferences", []),
            "clusterIP": spec.get("clusterIP"), "selector": spec.get("selector", {}),
            "ports": sorted(spec.get("ports", []), key=lambda p: p.get("name", ""))}


def parse_tfconfig(pod):
    for c in pod["containers"]:
        for e in c.get("env", []):
            if e["name"] == "TF_CONFIG":
                try:
                    e["value"] = json.loads(e["value"])
                except (TypeError, ValueError):
                    pass


def diff(path, want, got, out):
    if isinstance(want, dict) and isinstance(got, dict):
        for k in sorted(set(want) | set(got)):
            diff("%s.%s" % (path, k), want.get(k), got.get(k), out)
    elif isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        for i, (w, g) in enumerate(zip(want, got)):
            diff("%s[%d]" % (path, i), w, g, out)
    elif want != got and not (want in (None, {}, []) and got in (None, {}, [])):
        out.append("%s: Kubeflow %s, here %s" % (path, json.dumps(want), json.dumps(got)))


def go_json(tfc):
    """TF_CONFIG bytes as Go's encoding/json writes them: struct fields in
    order, map keys (cluster, the sparse worker map) sorted."""
    out = dict(tfc)
    if isinstance(out["cluster"], dict) and "environment" in out:
        out["cluster"] = dict(sorted(out["cluster"].items()))   # ClusterSpec is a map
    elif isinstance(out["cluster"].get("worker"), dict):
        out["cluster"] = dict(out["cluster"], worker=dict(sorted(out["cluster"]["worker"].items())))
    return json.dumps(out, separators=(",", ":"))


def self_test():
    """The model against Kubeflow's own unit tests: the TF_CONFIG strings of
    pkg/controller.v1/tensorflow/pod_test.go L65-91 (no custom cluster
    domain) and the sparse specs of tensorflow_test.go L23-40."""
    def job(ns, **replicas):
        specs = {t: {"replicas": n, "template": {"spec": {"containers": [
            {"name": CONTAINER, "image": "x"}]}}} for t, n in replicas.items()}
        return defaulted({"metadata": {"name": "test-tfjob", "namespace": ns, "uid": "u"},
                          "spec": {"tfReplicaSpecs": specs}})
    n = "test-tfjob"
    cases = [
        (tf_config(job("ns0", Worker=1), "worker", 0), None),
        (go_json(tf_config(job("ns2", Worker=1, PS=1), "worker", 0)),
         '{"cluster":{"ps":["%s-ps-0.ns2.svc:2222"],"worker":["%s-worker-0.ns2.svc:2222"]},'
         '"task":{"type":"worker","index":0},"environment":"cloud"}' % (n, n)),
        (go_json(tf_config(job("ns3", Worker=1, PS=1, Evaluator=1), "worker", 0)),
         '{"cluster":{"evaluator":["%s-evaluator-0.ns3.svc:2222"],"ps":["%s-ps-0.ns3.svc:2222"],'
         '"worker":["%s-worker-0.ns3.svc:2222"]},"task":{"type":"worker","index":0},'
         '"environment":"cloud"}' % (n, n, n)),
    ]
    dyn = job("ns", Worker=2, PS=2)
    dyn["spec"]["enableDynamicWorker"] = True
    ps = ["%s-ps-%d.ns.svc:2222" % (n, i) for i in range(2)]
    cases += [
        (tf_config(dyn, "worker", 1)["cluster"],
         {"worker": {"1": "%s-worker-1.ns.svc:2222" % n}, "ps": ps}),
        (tf_config(dyn, "ps", 1)["cluster"], {"worker": {}, "ps": [ps[1]]}),
        (go_json(tf_config(dyn, "worker", 0)),
         '{"cluster":{"worker":{"0":"%s-worker-0.ns.svc:2222"},"ps":["%s","%s"]},'
         '"task":{"type":"worker","index":0}}' % (n, ps[0], ps[1])),
    ]
    bad = [i for i, (got, want) in enumerate(cases) if got != want]
    for i in bad:
        print("kfcompare: self-test case %d: model %r, Kubeflow %r" % (i, cases[i][0], cases[i][1]))
    print("kfcompare: self-test %s (%d cases)" % ("FAILED" if bad else "ok", len(cases)))
    return 1 if bad else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--namespace", required=True)
    ap.add_argument("--job", required=True)
    ap.add_argument("--wait", type=float, default=120,
                    help="seconds to wait for the operator to create every child")
    ap.add_argument("--strict", action="store_true",
                    help="Kubeflow's objects as they are, our deliberate differences not "
                         "applied (they must then show: the comparison can fail)")
    a = ap.parse_args()
    job = defaulted(kubectl("-n", a.namespace, "get", "tfjob", a.job, "-o", "json"))
    want_pods, want_svcs = kubeflow_objects(job)
    for p in want_pods.values():
        parse_tfconfig(p)
    if not a.strict:
        deliberate(job, want_pods, want_svcs)
    deadline = time.monotonic() + a.wait
    while True:
        pods, svcs = children(a.namespace, a.job, "pods"), children(a.namespace, a.job, "services")
        if (set(pods) >= set(want_pods) and set(svcs) >= set(want_svcs)) or \
                time.monotonic() > deadline:
            break
        time.sleep(1)
    out = []
    if sorted(pods) != sorted(want_pods):
        out.append("pods: Kubeflow %s, here %s" % (sorted(want_pods), sorted(pods)))
    if sorted(svcs) != sorted(want_svcs):
        out.append("services: Kubeflow %s, here %s" % (sorted(want_svcs), sorted(svcs)))
    for name in sorted(set(want_pods) & set(pods)):
        got = actual_pod(pods[name])
        parse_tfconfig(got)
        diff("pod/" + name, expected_pod_view(want_pods[name]), got, out)
    for name in sorted(set(want_svcs) & set(svcs)):
        diff("service/" + name, want_svcs[name], actual_svc(svcs[name]), out)
    for line in out:
        print("kfcompare: %s/%s: %s" % (a.namespace, a.job, line))
    if out:
        return 1
    print("kfcompare: %s/%s: %d pods, %d services as Kubeflow v1.9 makes them" %
          (a.namespace, a.job, len(pods), len(svcs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
