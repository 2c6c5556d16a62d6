"""Classic between-graph parameter-server training written for TensorFlow.

One process per task, like TensorFlow 1.x distributed training: a
tf.compat.v1.train.Server per task from one ClusterSpec, variables placed on
the ps with replica_device_setter, each worker builds its own graph and runs
plain SGD (async) or SyncReplicasOptimizer (sync). The evaluator reads the
variables from the ps every --eval_secs seconds and prints the test accuracy.

The model, data, batch size, learning rate, epochs, data sharding (example j
goes to worker j mod workers) and thread limits (1 intra-op and 1 inter-op
thread per process) match `tfjob-runtime launch --optimizer sgd
--lr_schedule constant`, see bench/tf/compare.py.

Output: the chief prints `TFB_RESULT {json}`, the evaluator `TFB_EVAL {json}`.
"""
import argparse
import gzip
import json
import math
import os
import struct
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf1 = tf.compat.v1


def load_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, n = struct.unpack(">II", data[:8])
    if magic == 2051:
        rows, cols = struct.unpack(">II", data[8:16])
        return np.frombuffer(data, np.uint8, offset=16).reshape(n, rows * cols)
    if magic == 2049:
        return np.frombuffer(data, np.uint8, offset=8).astype(np.int64)
    raise ValueError("%s: bad IDX magic %d" % (path, magic))


def load(data_dir, split):
    x = load_idx(os.path.join(data_dir, "%s-images-idx3-ubyte.gz" % split))
    y = load_idx(os.path.join(data_dir, "%s-labels-idx1-ubyte.gz" % split))
    return x.astype(np.float32) / 255.0, y


def build_model(x, model, hidden):
    dims = [784] + (hidden if model == "mlp" else []) + [10]
    h = x
    for i in range(len(dims) - 1):
        name = "logits" if i == len(dims) - 2 else "dense_%d" % i
        with tf1.variable_scope(name):
            w = tf1.get_variable("kernel", [dims[i], dims[i + 1]],
                                 initializer=tf1.glorot_uniform_initializer(seed=i + 1))
            b = tf1.get_variable("bias", [dims[i + 1]], initializer=tf1.zeros_initializer())
        h = tf1.matmul(h, w) + b
        if i < len(dims) - 2:
            h = tf1.nn.relu(h)
    return h


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--job_name", required=True, choices=["ps", "worker", "evaluator"])
    ap.add_argument("--task_index", type=int, default=0)
    ap.add_argument("--ps_hosts", required=True)
    ap.add_argument("--worker_hosts", required=True)
    ap.add_argument("--model", default="softmax", choices=["softmax", "mlp"])
    ap.add_argument("--hidden", default="256",
                    help="hidden widths, comma-separated (1024,1024: the larger MLP)")
    ap.add_argument("--batch_size", type=int, default=64)
    ap.add_argument("--learning_rate", type=float, default=0.1)
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--sync", action="store_true")
    ap.add_argument("--eval_secs", type=float, default=2.0)
    ap.add_argument("--data_dir", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--t0", type=float, default=time.time(),
                    help="epoch seconds the harness started the job (time axis)")
    a = ap.parse_args()

    ps = a.ps_hosts.split(",")
    workers = a.worker_hosts.split(",")
    cluster = tf1.train.ClusterSpec({"ps": ps, "worker": workers})
    threads = dict(intra_op_parallelism_threads=1, inter_op_parallelism_threads=2)
    if a.job_name == "ps":
        server = tf1.train.Server(cluster, job_name="ps", task_index=a.task_index,
                                  config=tf1.ConfigProto(**threads))
        server.join()
        return 0

    tf1.disable_eager_execution()
    nrep = len(workers)
    k = nrep if a.sync else 1
    max_steps = int(math.ceil(a.epochs * 60000 / (a.batch_size * k)))
    xte, yte = load(a.data_dir, "t10k")

    if a.job_name == "evaluator":
        # Not a cluster member: a client of the ps over gRPC, like the
        # runtime's evaluator. The graph pins variables to the ps.
        target = "grpc://" + ps[0]
        dev = tf1.train.replica_device_setter(cluster=cluster, worker_device="/job:worker/task:0")
    else:
        server = tf1.train.Server(cluster, job_name="worker", task_index=a.task_index,
                                  config=tf1.ConfigProto(**threads))
        target = server.target
        dev = tf1.train.replica_device_setter(
            cluster=cluster, worker_device="/job:worker/task:%d" % a.task_index)

    with tf1.device(dev):
        gstep = tf1.train.get_or_create_global_step()
        x = tf1.placeholder(tf.float32, [None, 784])
        y = tf1.placeholder(tf.int64, [None])
        logits = build_model(x, a.model, [int(w) for w in a.hidden.split(",")])
        loss = tf1.reduce_mean(tf1.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        acc = tf1.reduce_mean(tf1.cast(tf1.equal(tf1.argmax(logits, 1), y), tf.float32))
        opt = tf1.train.GradientDescentOptimizer(a.learning_rate)
        if a.sync:
            opt = tf1.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=nrep,
                                                  total_num_replicas=nrep)
        train_op = opt.minimize(loss, global_step=gstep)

    cfg = tf1.ConfigProto(device_filters=["/job:ps", "/job:worker/task:%d" % a.task_index],
                          **threads)

    if a.job_name == "evaluator":
        cfg = tf1.ConfigProto(**threads)
        # The chief initialises the variables; poll until it has.
        while True:
            try:
                with tf1.Session(target, config=cfg) as s:
                    last = -1
                    while True:
                        step = s.run(gstep)
                        if step != last:
                            a_, l_ = s.run([acc, loss], {x: xte, y: yte})
                            print("TFB_EVAL " + json.dumps({
                                "step": int(step), "accuracy": float(a_), "loss": float(l_),
                                "time_s": time.time() - a.t0}), flush=True)
                            last = step
                        if step >= max_steps:
                            return 0
                        time.sleep(a.eval_secs)
            except (tf.errors.FailedPreconditionError, tf.errors.UnavailableError):
                time.sleep(0.5)

    xtr, ytr = load(a.data_dir, "train")
    idx = np.arange(a.task_index, len(xtr), nrep)
    xs, ys = xtr[idx], ytr[idx]
    rng = np.random.default_rng(a.task_index + 1)
    is_chief = a.task_index == 0
    hooks = [tf1.train.StopAtStepHook(last_step=max_steps)]
    if a.sync:
        hooks.append(opt.make_session_run_hook(is_chief, num_tokens=0))
    local = 0
    step = 0
    # A SyncReplicasOptimizer worker blocks on its token queue when its peer
    # has already stopped at max_steps (StopAtStepHook sees the global step
    # of the previous run), and closing the MonitoredSession then waits for
    # the chief's queue runners. Each run is therefore bounded; a timed-out
    # run after the last step ends training, the time of the last completed
    # step is the training time, and the process exits without the close.
    # (Async runs never block on a peer and run exactly the classic loop.)
    opts = tf1.RunOptions(timeout_in_ms=5000) if a.sync else None
    sess = tf1.train.MonitoredTrainingSession(master=target, is_chief=is_chief, hooks=hooks,
                                              config=cfg, checkpoint_dir=None,
                                              save_checkpoint_secs=None,
                                              save_summaries_steps=None,
                                              save_summaries_secs=None,
                                              log_step_count_steps=0)
    perm = rng.permutation(len(xs))
    pos = 0
    t_start = t_end = time.time()
    while not sess.should_stop():
        if pos + a.batch_size > len(perm):
            perm = rng.permutation(len(xs))
            pos = 0
        b = perm[pos:pos + a.batch_size]
        pos += a.batch_size
        try:
            sess.run(train_op, {x: xs[b], y: ys[b]}, options=opts)
        except tf.errors.DeadlineExceededError:
            with tf1.Session(target, config=cfg) as s:
                step = s.run(gstep)
            if step >= max_steps:
                break
            continue
        local += 1
        t_end = time.time()
    if is_chief:
        with tf1.Session(target, config=cfg) as s:
            step, a_, l_ = s.run([gstep, acc, loss], {x: xte, y: yte})
        examples = int(step) * a.batch_size * k
        print("TFB_RESULT " + json.dumps({
            "test_accuracy": float(a_), "test_loss": float(l_), "step": int(step),
            "examples": examples, "train_s": t_end - t_start,
            "examples_per_sec": examples / (t_end - t_start),
            "time_s": time.time() - a.t0, "local_steps": local}), flush=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
