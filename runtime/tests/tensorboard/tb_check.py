#!/usr/bin/env python3
"""Reads tfjob-runtime's event files with TensorBoard's own EventAccumulator
(tensorboard.backend.event_processing) and checks what it finds.

  tb_check.py progress LOGDIR OUTPUT MAX_STEPS
      The runtime's TFJ_PROGRESS lines in OUTPUT (a `tfjob-runtime launch`
      log) against run "train" (the coordinator's loss at the same steps,
      final test accuracy at MAX_STEPS) and run "eval" (the evaluator's
      accuracy and loss at the same steps).
  tb_check.py prefix RUNDIR MIN_STEPS
      RUNDIR's one event file (what tests/tensorboard/evwriter writes, maybe
      killed mid-run) holds W whole records by its framing; TensorBoard must
      find loss = 1/s for s = 1..W-1 (the first record is the version),
      W-1 >= MIN_STEPS. Then the same file cut at several places inside its
      last record must read as the first W-2 points.
"""
import shutil
import tempfile
import json
import math
import os
import sys

from tensorboard.backend.event_processing import event_accumulator


def scalars(rundir):
    acc = event_accumulator.EventAccumulator(rundir, size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-6)


def fail(msg):
    print("tb_check: FAIL: " + msg)
    sys.exit(1)


def progress(logdir, output, max_steps):
    coord, evals = [], []
    with open(output, encoding="utf-8", errors="replace") as f:
        for line in f:
            i = line.find("TFJ_PROGRESS ")
            if i < 0:
                continue
            rec = json.loads(line[i + len("TFJ_PROGRESS "):])
            if rec["role"] == "evaluator":
                evals.append(rec)
            elif rec["role"] == "chief" or (rec["role"] == "worker" and rec["index"] == 0):
                coord.append(rec)
    train, ev = scalars(os.path.join(logdir, "train")), scalars(os.path.join(logdir, "eval"))
    want = [(r["step"], r["loss"]) for r in coord if not r.get("final")]
    got = train.get("loss", [])
    if not want or len(got) != len(want) or not all(
            g[0] == w[0] and close(g[1], w[1]) for g, w in zip(got, want)):
        fail("train loss %s, progress records say %s" % (got, want))
    for tag in ("examples_per_sec", "global_step/sec"):
        if [s for s, _ in train.get(tag, [])][-1:] != [want[-1][0]]:
            fail("train %s ends at %s, want step %d" % (tag, train.get(tag), want[-1][0]))
    final = [r for r in coord if r.get("final")]
    if not final or train.get("test_accuracy") is None or \
            train["test_accuracy"][-1][0] != max_steps or \
            not close(train["test_accuracy"][-1][1], final[-1]["test_accuracy"]):
        fail("train test_accuracy %s, final record %s" % (train.get("test_accuracy"), final))
    want = [(r["step"], r["accuracy"], r["loss"]) for r in evals]
    got = list(zip(ev.get("accuracy", []), ev.get("loss", [])))
    if not want or len(got) != len(want) or want[-1][0] != max_steps or not all(
            a[0] == w[0] and l[0] == w[0] and close(a[1], w[1]) and close(l[1], w[2])
            for (a, l), w in zip(got, want)):
        fail("eval accuracy/loss %s, progress records say %s" % (got, want))
    print("tb_check: train: %d loss points, steps %d..%d, test_accuracy %.4f at %d; "
          "eval: %d points" % (len(train["loss"]), train["loss"][0][0], train["loss"][-1][0],
                               train["test_accuracy"][-1][1], max_steps, len(got)))


def frames(path):
    """End offsets of the whole records in path, by their length fields only."""
    with open(path, "rb") as f:
        data = f.read()
    ends, off = [], 0
    while len(data) - off >= 12:
        n = int.from_bytes(data[off:off + 8], "little")
        if len(data) - off < 12 + n + 4:
            break
        off += 12 + n + 4
        ends.append(off)
    return data, ends


def check_points(rundir, want):
    got = scalars(rundir).get("loss", [])
    for i, (step, value) in enumerate(got):
        if step != i + 1 or not close(value, 1.0 / step):
            fail("%s: point %d is step %d value %g, want step %d value %g" %
                 (rundir, i, step, value, i + 1, 1.0 / (i + 1)))
    if len(got) != want:
        fail("%s: TensorBoard read %d points, the file has %d whole ones" % (rundir, len(got), want))


def prefix(rundir, min_steps):
    files = [f for f in os.listdir(rundir) if "tfevents" in f]
    if len(files) != 1:
        fail("%s holds %s, want one event file" % (rundir, files))
    data, ends = frames(os.path.join(rundir, files[0]))
    whole = len(ends) - 1
    if whole < min_steps:
        fail("%d whole records, want at least %d" % (whole, min_steps))
    check_points(rundir, whole)
    # The last record cut short: in its header, right after it, in its data,
    # one byte before its end. TensorBoard must stop before it.
    start, end = ends[-2], ends[-1]
    tmp = tempfile.mkdtemp(prefix="tb-check-cut-")
    try:
        for cut in (start + 5, start + 12, (start + 12 + end - 4) // 2, end - 1):
            run = os.path.join(tmp, "cut%d" % (cut - start))
            os.mkdir(run)
            with open(os.path.join(run, files[0]), "wb") as f:
                f.write(data[:cut])
            check_points(run, whole - 1)
    finally:
        shutil.rmtree(tmp)
    print("%d %d" % (whole, len(data) - ends[-1]))


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "progress":
        progress(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif len(sys.argv) == 4 and sys.argv[1] == "prefix":
        prefix(sys.argv[2], int(sys.argv[3]))
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
