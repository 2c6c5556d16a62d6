"""bench/runtime (issue #5): examples/s of tfjob-runtime launch (1 ps + 2
workers, softmax and MLP, async and sync) with the per-step split into pull,
compute and push, and push/pull bandwidth against raw loopback TCP
(tfj-bench-pushpull). Writes OUT/runtime.json and OUT/runtime.md.

Usage: bench_runtime.py BUILD_DIR OUT_DIR [--quick]
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
    os.makedirs(os.path.join(out, "logs"), exist_ok=True)
    runtime = os.path.join(build, "runtime", "tfjob-runtime")
    pushpull = os.path.join(build, "bench", "runtime", "tfj-bench-pushpull")
    reps = 1 if quick else 3
    epochs = {"softmax": 1 if quick else 3, "mlp": 1 if quick else 2}
    results = {"launch": [], "pushpull": [], "quick": quick}

    # Push/pull bandwidth vs raw TCP: several independent runs, medians.
    sizes = "1,4,16" if quick else "1,4,16,64"
    for r in range(2 if quick else 3):
        load = procmon.loadavg()
        p = subprocess.run([pushpull, "--runtime", runtime, "--sizes", sizes,
                            "--reps", "10" if quick else "20"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                           timeout=600)
        if p.returncode != 0:
            raise SystemExit("tfj-bench-pushpull failed: %s" % p.stdout)
        for line in p.stdout.splitlines():
            rec = json.loads(line)
            rec["run"], rec["load"] = r, load
            results["pushpull"].append(rec)
            print("pushpull", json.dumps(rec), flush=True)

    for model in ("softmax", "mlp"):
        for sync in (False, True):
            for r in range(reps):
                rec = jobs.run_ours(runtime, model, sync, epochs[model], 64, 0.1,
                                    log=os.path.join(out, "logs", "runtime-%s-%s-%d.log" % (
                                        model, "sync" if sync else "async", r)))
                rec["rep"] = r
                results["launch"].append(rec)
                print("launch", model, sync, r, rec["examples_per_sec"], rec["test_accuracy"],
                      rec["load"], flush=True)

    with open(os.path.join(out, "runtime.json"), "w") as f:
        json.dump(results, f, indent=1)

    md = ["| model | mode | epochs | examples/s median (min-max) | train s/epoch | pull ms | "
          "compute ms | push ms | test acc | load 1m at start |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for model in ("softmax", "mlp"):
        for sync in (False, True):
            rs = [x for x in results["launch"] if x["model"] == model and x["sync"] == sync]
            e = med_spread([x["examples_per_sec"] for x in rs])
            md.append("| %s | %s | %s | %.0f (%.0f-%.0f) | %.2f | %.2f | %.2f | %.2f | %.4f | %s |" % (
                model, "sync" if sync else "async", rs[0]["epochs"], e[0], e[1], e[2],
                statistics.median([x["s_per_epoch"] for x in rs]),
                statistics.median([x["pull_ms"] for x in rs]),
                statistics.median([x["compute_ms"] for x in rs]),
                statistics.median([x["push_ms"] for x in rs]),
                statistics.median([x["test_accuracy"] for x in rs]),
                ", ".join("%.1f" % x["load"][0] for x in rs)))
    md += ["", "| tensor MiB | pull MiB/s | push MiB/s | raw TCP MiB/s | pull/TCP | push/TCP | "
           "load 1m |", "|---|---|---|---|---|---|---|"]
    for size in sorted({x["size_mib"] for x in results["pushpull"]}):
        rs = [x for x in results["pushpull"] if x["size_mib"] == size]
        pr = med_spread([x["pull_ratio"] for x in rs])
        sr = med_spread([x["push_ratio"] for x in rs])
        md.append("| %.1f | %.0f | %.0f | %.0f | %.2f (%.2f-%.2f) | %.2f (%.2f-%.2f) | %s |" % (
            size, statistics.median([x["pull_mib_s"] for x in rs]),
            statistics.median([x["push_mib_s"] for x in rs]),
            statistics.median([x["tcp_mib_s"] for x in rs]), pr[0], pr[1], pr[2],
            sr[0], sr[1], sr[2], ", ".join("%.1f" % x["load"][0] for x in rs)))
    with open(os.path.join(out, "runtime.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
