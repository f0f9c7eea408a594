"""The PNG plots of a suite's summary (``latest.md``'s figures), when matplotlib is
installed."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def plots(summary: dict[str, Any], doc: dict[str, Any], out: Path) -> list[str]:
    """The PNGs; an empty list when matplotlib is not installed."""
    try:
        import matplotlib  # noqa: PLC0415

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        return []
    systems = summary["systems"]
    by_id = {m["id"]: m for m in summary["metrics"]}
    written = []

    fig, ax = plt.subplots(figsize=(11, 5))
    bars = [("w1_enqueue_call", "enqueue, per call", "tab:blue"),
            ("w1_enqueue_batch", "enqueue, batch", "tab:cyan"),
            ("w1_complete_1", "completion, 1 worker", "tab:green"),
            ("w1_complete_2", "completion, 2 workers", "tab:olive")]
    width = 0.8 / len(bars)
    for i, (mid, label, color) in enumerate(bars):
        xs, ys, lo, hi, hatch = [], [], [], [], []
        for j, system in enumerate(systems):
            cell = by_id[mid]["values"].get(system, {})
            if "median" in cell:
                xs.append(j + (i - (len(bars) - 1) / 2) * width)
                ys.append(cell["median"])
                lo.append(cell["median"] - cell["min"])
                hi.append(cell["max"] - cell["median"])
                hatch.append(cell["status"] == "partial")
        drawn = ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, label=label, color=color)
        for patch, partial in zip(drawn, hatch, strict=True):
            if partial:
                patch.set_hatch("//")
    ax.set_yscale("log")
    ax.set_xticks(range(len(systems)), systems, rotation=20)
    ax.set_ylabel("jobs per second (log)")
    ax.set_title(f"W1: {summary['profile']['w1_jobs']:,} no-op jobs "
                 "(median, min\u2013max; hatched: timed out, rate so far)")
    ax.grid(axis="y", alpha=0.3)
    written.append(_save(plt, fig, ax, out / "throughput.png"))

    fig, ax = plt.subplots(figsize=(8, 5))
    for system in systems:
        samples = summary["latency_samples_ms"].get(system) or []
        if samples:
            ys = [(i + 1) / len(samples) for i in range(len(samples))]
            ax.plot(samples, ys, label=system)
    ax.set_xscale("log")
    ax.set_xlabel("submit -> handler start (ms, log)")
    ax.set_ylabel("fraction of jobs")
    ax.set_title(f"W2: latency CDF, {summary['profile']['w2_jobs']} sequential jobs "
                 "(all repetitions)")
    ax.grid(alpha=0.3)
    written.append(_save(plt, fig, ax, out / "latency_cdf.png"))

    fig, ax = plt.subplots(figsize=(8, 5))
    sizes = sorted(int(m["id"][3:]) for m in summary["metrics"] if m["id"].startswith("w3_"))
    for system in systems:
        pts = [(n, by_id[f"w3_{n}"]["values"].get(system, {})) for n in sizes]
        pts = [(n, c) for n, c in pts if "median" in c]
        if pts:
            ax.errorbar([n for n, _ in pts], [c["median"] for _, c in pts],
                        yerr=[[c["median"] - c["min"] for _, c in pts],
                              [c["max"] - c["median"] for _, c in pts]],
                        marker="o", capsize=3, label=system)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("pending jobs (log)")
    ax.set_ylabel("ms per cycle placing 50 jobs (log)")
    ax.set_title("W3: scheduling cycle vs backlog (peers: 50 dequeues)")
    ax.grid(alpha=0.3)
    written.append(_save(plt, fig, ax, out / "backlog.png"))
    return written


def _save(plt: Any, fig: Any, ax: Any, path: Path) -> str:
    """Legend, layout, the PNG written and the figure closed; the file's name."""
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name
