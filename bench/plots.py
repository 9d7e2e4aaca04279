"""The benchmark figure (results.png): bounding boxes, read amplification, point look-ups, index interval."""

import numpy as np

from boxes import COMPARATORS, LABELS
from points import POINT_METHODS, SHORT_POINT_LABELS
from report import _fmt_n


def plot(report, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    big = report["sizes"][-1]
    fig, axes = plt.subplots(2, 2, figsize=(14, 10))
    colors = {"sfclayer": "C0", "parquet_zsorted": "C1", "parquet_plain": "C2", "sfclayer_fullscan": "C3"}

    ax = axes[0][0]
    width = 0.8 / len(COMPARATORS)
    xs = np.arange(len(big["bbox"]))
    for i, name in enumerate(COMPARATORS):
        ys = [b["results"][name]["median_s"] for b in big["bbox"]]
        bars = ax.bar(xs + (i - (len(COMPARATORS) - 1) / 2) * width, ys, width, color=colors[name], label=LABELS[name])
        for bar, b in zip(bars, big["bbox"]):
            ratio = b["results"][name]["median_s"] / b["results"]["sfclayer"]["median_s"]
            ax.annotate(f"{ratio:.1f}×", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        ha="center", va="bottom", fontsize=7)
    ax.set_xticks(xs)
    ax.set_xticklabels([f"{b['actual_fraction']:.1%} ({b['tiles']:,} tiles)" for b in big["bbox"]], fontsize=8)
    ax.set_ylabel("median query time (s)")
    ax.set_title(f"Bounding-box queries ({_fmt_n(big['tiles'])} tiles; × sfclayer's time)")
    ax.set_ylim(0, ax.get_ylim()[1] * 1.35)
    ax.legend(fontsize=8, loc="upper left", ncol=2)
    ax.grid(True, axis="y", alpha=0.3)

    ax = axes[0][1]
    for name in COMPARATORS:
        xs = [b["actual_fraction"] * 100 for b in big["bbox"]]
        ys = [b["results"][name]["records_read"] / max(b["results"][name]["returned"], 1) for b in big["bbox"]]
        ax.plot(xs, ys, "o-", color=colors[name], label=LABELS[name])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("box area (% of layer)")
    ax.set_ylabel("records read per tile returned")
    ax.set_title(f"Read amplification ({_fmt_n(big['tiles'])} tiles)")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)

    ax = axes[1][0]
    lk = big["lookups"]
    methods = [(k, lab) for k, lab in POINT_METHODS if k not in ("open",)]
    ys = np.arange(len(methods))
    p50 = [lk[k]["p50_ms"] for k, _ in methods]
    p99 = [lk[k]["p99_ms"] for k, _ in methods]
    ax.barh(ys - 0.2, p50, height=0.4, label="p50", color="C0")
    ax.barh(ys + 0.2, p99, height=0.4, label="p99", color="C9")
    ax.set_yticks(ys)
    ax.set_yticklabels([SHORT_POINT_LABELS.get(k, lab) for k, lab in methods], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("latency (ms)")
    ax.set_title(f"Point look-ups ({_fmt_n(big['tiles'])} tiles)")
    ax.legend(fontsize=8)
    ax.grid(True, axis="x", which="both", alpha=0.3)

    ax = axes[1][1]
    iv = report.get("intervals")
    if iv:
        xs = [r["interval"] for r in iv["results"]]
        ax.plot(xs, [r["cold_socket"]["p50_ms"] for r in iv["results"]], "o-", color="C3", label="cold p50")
        ax.plot(xs, [r["warm_random_socket"]["p50_ms"] for r in iv["results"]], "s-", color="C0",
                label="warm random p50")
        ax.plot(xs, [r["warm_socket"]["p50_ms"] for r in iv["results"]], "^-", color="C2", label="warm neighbourhood p50")
        ax.plot(xs, [r["batch_warm"]["us_per_key"] / 1e3 for r in iv["results"]], "d--", color="C4",
                label="get_many per key (JVM cost)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("indexInterval")
        ax.set_ylabel("look-up latency (ms)")
        ax2 = ax.twinx()
        ax2.bar(xs, [r["index_heap_bytes"] / 1024 for r in iv["results"]],
                width=[x * 0.35 for x in xs], alpha=0.25, color="grey", label="index heap (KiB)")
        ax2.set_yscale("log")
        ax2.set_ylabel("index heap, all files (KiB)")
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, fontsize=8)
        ax.set_title(f"Index interval ({_fmt_n(iv['tiles'])} tiles)")
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle(f"sfclayer benchmarks — {report['machine']['cpu']}, {report['machine']['cores']} cores, "
                 f"{report['started']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
