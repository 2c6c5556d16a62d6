"""bench/runtime (issue #5): examples/s of tfjob-runtime launch (1 ps + 2
workers, softmax, MLP and the larger MLP; async with and without the
overlap of issue #18 in its step and push modes, and sync) with the per-step split into pull, compute,
push and wait (the compute standing still for transfers) and the step's
wall time against max(compute, pull + push), and push/pull bandwidth
against raw loopback TCP (tfj-bench-pushpull) with both ends on two CPUs
(placement split, as on two nodes) and on one CPU (placement same), each
against raw TCP placed the same way, with pushes whole (--push-part-kib 0)
and in the runtime's default parts (4 MiB, pipelined on the stream). Writes
OUT/runtime.json and OUT/runtime.md.

Usage: bench_runtime.py BUILD_DIR OUT_DIR [--quick] [--models a,b|none] [--no-pushpull]
"""
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import jobs  # noqa: E402
import procmon  # noqa: E402


def med_spread(v):
    return statistics.median(v), min(v), max(v)


def main():
    build, out = sys.argv[1], sys.argv[2]
    quick = "--quick" in sys.argv
    models = ("softmax", "mlp", "mlp-large")
    if "--models" in sys.argv:
        arg = sys.argv[sys.argv.index("--models") + 1]
        models = () if arg == "none" else tuple(arg.split(","))
    os.makedirs(os.path.join(out, "logs"), exist_ok=True)
    runtime = os.path.join(build, "runtime", "tfjob-runtime")
    pushpull = os.path.join(build, "bench", "runtime", "tfj-bench-pushpull")
    reps = 1 if quick else 3
    epochs = {"softmax": 1 if quick else 3, "mlp": 1 if quick else 2,
              "mlp-large": 0.2 if quick else 0.5}
    # (label, sync, overlap): --overlap is off by default; async-overlap is
    # --overlap=step, async-push --overlap=push.
    modes = (("async", False, False), ("async-overlap", False, "step"),
             ("async-push", False, "push"), ("sync", True, False))
    results = {"launch": [], "pushpull": [], "quick": quick}

    # Push/pull bandwidth vs raw TCP: several independent runs, medians.
    # Placement is pinned: left to the scheduler, a 2-core machine puts the
    # two ends on one CPU in some runs and on two in others, and both the
    # runtime's figures and raw TCP's change with it (docs/bench/history.md, part 6).
    sizes = "1,4,16" if quick else "1,4,16,64"
    # The CPUs this process may use (a cpuset or container may allow fewer than the host has).
    placements = ("split", "same") if len(os.sched_getaffinity(0)) >= 2 else ("same",)
    # Pushes whole ("0") and in the default parts (None: no flag), alternating.
    push_parts = ("0", None)
    for r in range(0 if "--no-pushpull" in sys.argv else 2 if quick else 3):
        for placement in placements:
            for part in push_parts:
                load = procmon.loadavg()
                # One BLAS thread, as every runtime task has in the images and
                # under launch: the ps never multiplies matrices, and idle
                # OpenBLAS threads spinning on sched_yield would take the cores
                # from gRPC.
                cmd = [pushpull, "--runtime", runtime, "--sizes", sizes,
                       "--reps", "10" if quick else "20", "--placement", placement]
                if part is not None:
                    cmd += ["--push-part-kib", part]
                p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, timeout=600,
                                   env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
                if p.returncode != 0:
                    raise SystemExit("%s failed: %s%s" % (" ".join(cmd[2:]), p.stdout,
                                                          p.stderr[-4000:]))
                for line in p.stdout.splitlines():
                    rec = json.loads(line)
                    rec["run"], rec["load"] = r, load
                    rec["push_parts"] = "whole" if part == "0" else "default"
                    results["pushpull"].append(rec)
                    print("pushpull", json.dumps(rec), flush=True)

    for model in models:
        for r in range(reps):
            for label, sync, overlap in modes:
                rec = jobs.run_ours(runtime, model, sync, epochs[model], 64, 0.1,
                                    overlap=overlap,
                                    log=os.path.join(out, "logs", "runtime-%s-%s-%d.log" % (
                                        model, label, r)))
                rec["rep"], rec["mode"] = r, label
                results["launch"].append(rec)
                print("launch", model, label, r, rec["examples_per_sec"], rec["test_accuracy"],
                      rec["load"], flush=True)

    with open(os.path.join(out, "runtime.json"), "w") as f:
        json.dump(results, f, indent=1)

    md = ["| model | mode | epochs | examples/s median (min-max) | train s/epoch | pull ms | "
          "compute ms | push ms | wait ms | step ms | step / max(compute, pull+push) | "
          "test acc | load 1m at start |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def med(rs, k):
        v = [x[k] for x in rs if x.get(k) is not None]
        return statistics.median(v) if v else float("nan")

    for model in models:
        for label, _, _ in modes:
            rs = [x for x in results["launch"] if x["model"] == model and x["mode"] == label]
            e = med_spread([x["examples_per_sec"] for x in rs])
            ratio = med_spread([x["step_ms"] / max(x["compute_ms"], x["pull_ms"] + x["push_ms"])
                                for x in rs if x.get("step_ms")] or [float("nan")])
            md.append("| %s | %s | %s | %.0f (%.0f-%.0f) | %.2f | %.2f | %.2f | %.2f | %.2f | "
                      "%.2f | %.2f (%.2f-%.2f) | %.4f | %s |" % (
                          model, label, rs[0]["epochs"], e[0], e[1], e[2], med(rs, "s_per_epoch"),
                          med(rs, "pull_ms"), med(rs, "compute_ms"), med(rs, "push_ms"),
                          med(rs, "wait_ms"), med(rs, "step_ms"), ratio[0], ratio[1], ratio[2],
                          med(rs, "test_accuracy"), ", ".join("%.1f" % x["load"][0] for x in rs)))
    md += ["", "| placement | pushes | tensor MiB | pull MiB/s | push MiB/s | raw TCP MiB/s | "
           "pull/TCP | push/TCP | load 1m |", "|---|---|---|---|---|---|---|---|---|"]
    pp = results["pushpull"]
    for placement, parts in [(pl, pa) for pl in placements for pa in ("whole", "default")]:
        for size in sorted({x["size_mib"] for x in pp}):
            rs = [x for x in pp if x["size_mib"] == size and x["placement"] == placement and
                  x["push_parts"] == parts]
            pr = med_spread([x["pull_ratio"] for x in rs])
            sr = med_spread([x["push_ratio"] for x in rs])
            md.append("| %s | %s | %.1f | %.0f | %.0f | %.0f | %.2f (%.2f-%.2f) | "
                      "%.2f (%.2f-%.2f) | %s |" % (
                          placement, "whole" if parts == "whole" else "4 MiB parts", size,
                          statistics.median([x["pull_mib_s"] for x in rs]),
                          statistics.median([x["push_mib_s"] for x in rs]),
                          statistics.median([x["tcp_mib_s"] for x in rs]), pr[0], pr[1], pr[2],
                          sr[0], sr[1], sr[2], ", ".join("%.1f" % x["load"][0] for x in rs)))
    with open(os.path.join(out, "runtime.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
