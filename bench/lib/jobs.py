"""Runs one training job (ours via `tfjob-runtime launch`, or TensorFlow's
between-graph cluster) under the process monitor and returns its figures."""
import json
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import procmon  # noqa: E402

DATA_DIR = "/usr/share/datasets/fashion-mnist"


def _free_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


# Fashion-MNIST's training set: an epoch is this many examples for both
# implementations (the workers split it between them).
TRAIN_EXAMPLES = 60000


def _children_cpu_s():
    """User + system seconds of every waited-for descendant so far. The job's
    processes are children (TensorFlow's tasks) or grandchildren waited for
    by `tfjob-runtime launch` (ours), so the difference around one job is the
    CPU time of all its processes, ps and evaluator included, however many
    cores they ran on."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _cpu_figures(epochs, cpu_s, procs):
    """The per-CPU-second figures of one run: the whole job, and its
    training tasks alone (ps and workers; the evaluator's share depends on
    how long the job runs, as it evaluates every eval_secs)."""
    examples = epochs * TRAIN_EXAMPLES
    train_cpu = sum(v["cpu_s"] for k, v in procs.items()
                    if k.split(":")[0] in ("ps", "worker", "chief"))
    return {"examples": examples, "cpu_s": cpu_s, "train_cpu_s": train_cpu,
            "examples_per_cpu_s": examples / cpu_s if cpu_s > 0 else None,
            "train_examples_per_cpu_s": examples / train_cpu if train_cpu > 0 else None}


def _median(v):
    return statistics.median(v) if v else None


# The models of the benchmarks: softmax, the MLP 784-256-10 and the larger
# MLP 784-1024-1024-10 of issue #18 (--model mlp-large in the runtime).
HIDDEN = {"mlp": "256", "mlp-large": "1024,1024"}


def run_ours(runtime, model, sync, epochs, batch, lr, evaluator=False, eval_secs=2.0,
             timeout=900, log=None, overlap=False):
    """tfjob-runtime launch --ps 1 --workers 2 with plain SGD, constant rate.
    overlap: False (the sequential loop), True or "step" (--overlap=step: transfers while
    the next step computes) or "push" (--overlap=push: each layer pushed as the backward
    pass finishes it)."""
    cmd = [runtime, "launch", "--ps", "1", "--workers", "2", "--model", model,
           "--epochs", str(epochs), "--batch_size", str(batch), "--optimizer", "sgd",
           "--lr_schedule", "constant", "--learning_rate", str(lr), "--data_dir", DATA_DIR,
           "--timeout", str(timeout), "--ps_linger", "1"]
    if model in HIDDEN:
        cmd[cmd.index("--model") + 1] = "mlp"
        cmd += ["--hidden", HIDDEN[model]]
    if sync:
        cmd.append("--sync")
    if overlap:
        cmd.append("--overlap=%s" % ("step" if overlap is True else overlap))
    if evaluator:
        cmd += ["--evaluator", "--eval_secs", str(eval_secs)]
    load0 = procmon.loadavg()
    mon = procmon.Monitor(os.getpid())
    mon.start()
    cpu0 = _children_cpu_s()
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout + 60)
    wall = time.time() - t0
    cpu_s = _children_cpu_s() - cpu0
    procs = mon.stop()
    if log:
        with open(log, "w") as f:
            f.write(" ".join(cmd) + "\n" + p.stdout)
    res, curve = None, []
    phase = {"pull_ms": [], "compute_ms": [], "push_ms": [], "wait_ms": [], "step_ms": []}
    final = None
    for line in p.stdout.splitlines():
        if line.startswith("TFJ_RESULT "):
            res = json.loads(line[len("TFJ_RESULT "):])
        i = line.find("TFJ_PROGRESS ")
        if i < 0:
            continue
        rec = json.loads(line[i + len("TFJ_PROGRESS "):])
        if rec.get("role") == "evaluator" and rec.get("accuracy") is not None:
            curve.append((rec["time_s"], rec["accuracy"]))
        if rec.get("final") and rec.get("test_accuracy") is not None:
            final = rec
        elif rec.get("role") in ("worker", "chief"):
            for k in phase:
                if rec.get(k) is not None:
                    phase[k].append(rec[k])
    if p.returncode != 0 or not res or not final:
        raise RuntimeError("launch failed (rc %d): %s" % (p.returncode, p.stdout[-2000:]))
    result = {
        "impl": "tfjob-runtime", "model": model, "sync": sync, "epochs": epochs,
        "test_accuracy": final["test_accuracy"], "examples_per_sec": final["examples_per_sec"],
        "train_s": final["train_s"], "wall_s": wall, "steps": final["step"],
        "s_per_epoch": final["train_s"] / epochs,
        "pull_ms": _median(phase["pull_ms"]), "compute_ms": _median(phase["compute_ms"]),
        "push_ms": _median(phase["push_ms"]), "wait_ms": _median(phase["wait_ms"]),
        "step_ms": _median(phase["step_ms"]), "overlap": overlap, "procs": procs,
        "curve": curve, "load": load0,
    }
    result.update(_cpu_figures(epochs, cpu_s, procs))
    return result


def run_tf(python, script, model, sync, epochs, batch, lr, evaluator=True, eval_secs=2.0,
           timeout=900, log=None):
    """TensorFlow between-graph: 1 ps + 2 workers (+ evaluator client)."""
    pp, w0, w1 = _free_ports(3)
    common = ["--ps_hosts", "127.0.0.1:%d" % pp,
              "--worker_hosts", "127.0.0.1:%d,127.0.0.1:%d" % (w0, w1),
              "--model", "mlp" if model in HIDDEN else model,
              "--hidden", HIDDEN.get(model, "256"),
              "--epochs", str(epochs), "--batch_size", str(batch),
              "--learning_rate", str(lr), "--data_dir", DATA_DIR,
              "--eval_secs", str(eval_secs)]
    if sync:
        common.append("--sync")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="")
    load0 = procmon.loadavg()
    t0 = time.time()
    common += ["--t0", repr(t0)]
    mon = procmon.Monitor(os.getpid())
    mon.start()
    cpu0 = _children_cpu_s()
    roles = [("ps", 0), ("worker", 0), ("worker", 1)] + ([("evaluator", 0)] if evaluator else [])
    procs = {}
    logf = open(log, "w") if log else subprocess.DEVNULL
    for job, idx in roles:
        procs[(job, idx)] = subprocess.Popen(
            [python, script, "--job_name", job, "--task_index", str(idx)] + common,
            stdout=subprocess.PIPE, stderr=logf, text=True, env=env)
    out = {}
    try:
        # The chief's exit ends the job; in TensorFlow the ps never exits
        # and a non-chief sync worker may wait on the token queue forever,
        # so the rest is stopped after a grace period, as a launcher would.
        out[("worker", 0)] = procs[("worker", 0)].communicate(timeout=timeout)[0]
        wall = time.time() - t0
        if evaluator:
            try:
                out[("evaluator", 0)] = procs[("evaluator", 0)].communicate(timeout=20)[0]
            except subprocess.TimeoutExpired:
                pass
    finally:
        for k, p in procs.items():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for k, p in procs.items():
            try:
                rest = p.communicate(timeout=10)[0]
            except subprocess.TimeoutExpired:
                p.kill()
                rest = p.communicate()[0]
            out.setdefault(k, rest or "")
        cpu_s = _children_cpu_s() - cpu0
        pinfo = mon.stop()
        if log:
            logf.close()
    res, curve = None, []
    for k, text in out.items():
        for line in (text or "").splitlines():
            if line.startswith("TFB_RESULT "):
                res = json.loads(line[len("TFB_RESULT "):])
            elif line.startswith("TFB_EVAL "):
                r = json.loads(line[len("TFB_EVAL "):])
                curve.append((r["time_s"], r["accuracy"]))
    if log:
        with open(log, "a") as f:
            for k, text in out.items():
                f.write("== %s:%d\n%s\n" % (k[0], k[1], text))
    if not res:
        raise RuntimeError("TensorFlow job gave no result; see %s" % log)
    result = {
        "impl": "tensorflow", "model": model, "sync": sync, "epochs": epochs,
        "test_accuracy": res["test_accuracy"], "examples_per_sec": res["examples_per_sec"],
        "train_s": res["train_s"], "wall_s": wall, "steps": res["step"],
        "s_per_epoch": res["train_s"] / epochs, "procs": pinfo, "curve": sorted(curve),
        "load": load0,
    }
    result.update(_cpu_figures(epochs, cpu_s, pinfo))
    return result
