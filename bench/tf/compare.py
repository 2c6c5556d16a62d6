"""Runtime vs TensorFlow (issue #8): the same job (1 ps + 2 workers on
loopback, softmax, MLP 784-256-10 and the larger MLP 784-1024-1024-10 of
issue #18, async and sync, plain SGD with a
constant rate, same batch, epochs, data and data sharding, 1 compute thread
per process, an evaluator in both) run by `tfjob-runtime launch` and by
TensorFlow's classic between-graph setup (bench/tf/tf_between_graph.py).
Writes OUT/compare.json, OUT/compare.md and PLOTDIR/accuracy-*.png.

Usage: compare.py BUILD_DIR VENV_PYTHON OUT_DIR PLOT_DIR [--quick] [--models a,b]
(run it with the venv's python: the plots use its matplotlib)
"""
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import jobs  # noqa: E402

BATCH, LR = 64, 0.1


def main():
    build, py, out, plots = sys.argv[1:5]
    quick = "--quick" in sys.argv
    models = ("softmax", "mlp", "mlp-large")
    if "--models" in sys.argv:
        models = tuple(sys.argv[sys.argv.index("--models") + 1].split(","))
    os.makedirs(os.path.join(out, "logs"), exist_ok=True)
    os.makedirs(plots, exist_ok=True)
    runtime = os.path.join(build, "runtime", "tfjob-runtime")
    script = os.path.join(HERE, "tf_between_graph.py")
    reps = 1 if quick else 3
    epochs = {"softmax": 0.5 if quick else 5, "mlp": 0.3 if quick else 3,
              "mlp-large": 0.1 if quick else 1}
    runs = []
    for model in models:
        for sync in (False, True):
            mode = "sync" if sync else "async"
            for r in range(reps):
                # Alternate the order so drifting background load hits both.
                order = ("ours", "tf") if r % 2 == 0 else ("tf", "ours")
                for impl in order:
                    log = os.path.join(out, "logs", "cmp-%s-%s-%s-%d.log" % (impl, model, mode, r))
                    if impl == "ours":
                        rec = jobs.run_ours(runtime, model, sync, epochs[model], BATCH, LR,
                                            evaluator=True, eval_secs=1.0, log=log)
                    else:
                        rec = jobs.run_tf(py, script, model, sync, epochs[model], BATCH, LR,
                                          evaluator=True, eval_secs=1.0, log=log)
                    rec["rep"] = r
                    runs.append(rec)
                    print(impl, model, mode, r, "%.0f ex/s" % rec["examples_per_sec"],
                          "acc %.4f" % rec["test_accuracy"], "load", rec["load"], flush=True)
    with open(os.path.join(out, "compare.json"), "w") as f:
        json.dump({"quick": quick, "batch": BATCH, "lr": LR, "epochs": epochs, "runs": runs},
                  f, indent=1)

    def med(rs, key):
        return statistics.median([x[key] for x in rs])

    def rss(rs, label):
        v = [x["procs"].get(label, {}).get("rss_mib") for x in rs]
        v = [x for x in v if x]
        return statistics.median(v) if v else float("nan")

    def cpu(rs, label):
        v = [x["procs"].get(label, {}).get("cpu_s") for x in rs]
        v = [x for x in v if x is not None]
        return statistics.median(v) if v else float("nan")

    md = ["| model | mode | impl | examples/s median (min-max) | train s/epoch | wall s | "
          "test acc | peak RSS MiB ps / w0 / w1 / eval | load 1m |",
          "|---|---|---|---|---|---|---|---|---|"]
    ratios = ["| model | mode | examples/s ours/TF | s/epoch ours/TF | sum RSS ours/TF | "
              "test acc ours - TF |", "|---|---|---|---|---|---|"]
    # Examples per CPU-second (user + system time of every process of the
    # job): what one core buys, whatever the number of cores. The ratio is
    # of medians; min-max are the runs' own figures.
    percpu = ["| model | mode | impl | examples/CPU-s, whole job: median (min-max) | "
              "ps + workers only | CPU s per job | ps / w0 / w1 / eval CPU s |",
              "|---|---|---|---|---|---|---|"]
    percpu_ratios = ["| model | mode | examples/CPU-s ours/TF, whole job | ps + workers only |",
                     "|---|---|---|---|"]
    for model in models:
        for sync in (False, True):
            mode = "sync" if sync else "async"
            row = {}
            for impl in ("tfjob-runtime", "tensorflow"):
                rs = [x for x in runs if x["impl"] == impl and x["model"] == model and x["sync"] == sync]
                e = [x["examples_per_sec"] for x in rs]
                rsum = statistics.median([sum(p["rss_mib"] for k, p in x["procs"].items()
                                              if ":" in k) for x in rs])
                row[impl] = (med(rs, "examples_per_sec"), med(rs, "s_per_epoch"), rsum,
                             med(rs, "test_accuracy"))
                md.append("| %s | %s | %s | %.0f (%.0f-%.0f) | %.2f | %.1f | %.4f | %.0f / %.0f / %.0f / %.0f | %s |" % (
                    model, mode, impl, statistics.median(e), min(e), max(e),
                    med(rs, "s_per_epoch"), med(rs, "wall_s"), med(rs, "test_accuracy"),
                    rss(rs, "ps:0"), rss(rs, "worker:0"), rss(rs, "worker:1"),
                    rss(rs, "evaluator:0"), ", ".join("%.1f" % x["load"][0] for x in rs)))
                c = [x["examples_per_cpu_s"] for x in rs]
                row[impl] += (statistics.median(c), med(rs, "train_examples_per_cpu_s"))
                percpu.append("| %s | %s | %s | %.0f (%.0f-%.0f) | %.0f | %.1f | %s |" % (
                    model, mode, impl, statistics.median(c), min(c), max(c),
                    med(rs, "train_examples_per_cpu_s"), med(rs, "cpu_s"),
                    " / ".join("%.1f" % cpu(rs, label)
                               for label in ("ps:0", "worker:0", "worker:1", "evaluator:0"))))
            o, t = row["tfjob-runtime"], row["tensorflow"]
            percpu_ratios.append("| %s | %s | %.2f | %.2f |" % (model, mode, o[4] / t[4], o[5] / t[5]))
            ratios.append("| %s | %s | %.2f | %.2f | %.2f | %+.4f |" % (
                model, mode, o[0] / t[0], o[1] / t[1], o[2] / t[2], o[3] - t[3]))
    text = ("\n".join(md) + "\n\n" + "\n".join(ratios) + "\n\n" + "\n".join(percpu) +
            "\n\n" + "\n".join(percpu_ratios) + "\n")
    with open(os.path.join(out, "compare.md"), "w") as f:
        f.write(text)
    print(text)

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plots")
        return
    for model in models:
        fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
        for ax, sync in zip(axes, (False, True)):
            for impl, style in (("tfjob-runtime", "o-"), ("tensorflow", "s--")):
                for x in runs:
                    if x["impl"] == impl and x["model"] == model and x["sync"] == sync and x["rep"] == 0:
                        c = sorted(x["curve"])
                        ax.plot([p[0] for p in c], [p[1] for p in c], style, ms=3,
                                label="%s (%.0f ex/s)" % (impl, x["examples_per_sec"]))
            ax.set_title("%s, %s, 1 ps + 2 workers" % (model, "sync" if sync else "async"))
            ax.set_xlabel("wall time since start (s)")
            ax.grid(True, alpha=0.3)
            ax.legend(loc="lower right", fontsize=8)
        axes[0].set_ylabel("test accuracy (evaluator)")
        fig.tight_layout()
        fig.savefig(os.path.join(plots, "accuracy-%s.png" % model), dpi=90)
        plt.close(fig)


if __name__ == "__main__":
    main()
