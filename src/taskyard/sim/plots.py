"""PNG plots of a simulation report (``--plots DIR``): the queue over time, the waits
per type and priority, the utilization per pool. Needs matplotlib (``taskyard[sim]``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

MAX_TYPE_LINES = 8


class PlotsUnavailable(RuntimeError):
    """matplotlib is not installed."""


def write_plots(report: dict[str, Any], directory: Path) -> list[Path]:
    """Write ``queue.png``, ``waits.png`` and ``utilization.png`` into ``directory``
    (created if missing); returns their paths."""
    try:
        import matplotlib  # noqa: PLC0415 - an optional extra, slow to import

        matplotlib.use("Agg")
        from matplotlib import pyplot  # noqa: PLC0415
    except ImportError:
        raise PlotsUnavailable(
            "--plots needs matplotlib: pip install 'taskyard[sim]'") from None
    directory.mkdir(parents=True, exist_ok=True)
    title = f"{report['scenario']} (seed {report['seed']})"
    paths = []
    for name, draw in (("queue", _queue), ("waits", _waits), ("utilization", _utilization)):
        figure, axes = pyplot.subplots(figsize=(9, 4.5), layout="constrained")
        draw(axes, report)
        axes.set_title(f"{title}: {name}")
        path = directory / f"{name}.png"
        figure.savefig(path, dpi=100)
        pyplot.close(figure)
        paths.append(path)
    return paths


def _hours(report: dict[str, Any]) -> bool:
    return bool(report["simulated_seconds"] > 3 * 3600)


def _queue(axes: Any, report: dict[str, Any]) -> None:
    queue = report["queue"]
    scale, unit = (3600.0, "hours") if _hours(report) else (60.0, "minutes")
    times = [s[0] / scale for s in queue["samples"]]
    axes.plot(times, [s[1] for s in queue["samples"]], label="pending (all types)",
              linewidth=2)
    axes.plot(times, [s[2] for s in queue["samples"]], label="running", linewidth=1,
              linestyle="--")
    types = queue["types"]
    if 1 < len(types) <= MAX_TYPE_LINES:
        for n, name in enumerate(types):
            axes.plot(times, [s[3][n] for s in queue["samples"]], label=f"pending {name}",
                      linewidth=0.8)
    axes.set_xlabel(f"simulated time ({unit})")
    axes.set_ylabel("jobs")
    axes.legend(loc="upper right", fontsize="small")
    axes.grid(alpha=0.3)


def _waits(axes: Any, report: dict[str, Any]) -> None:
    rows = report["waits"]
    labels = [f"{w['type']} p{w['priority']}" for w in rows]
    positions = range(len(rows))
    width = 0.27
    for n, p in enumerate(("p50", "p95", "p99")):
        axes.barh([i + (n - 1) * width for i in positions], [w[p] for w in rows],
                  height=width, label=p)
    axes.set_yticks(list(positions), labels)
    axes.invert_yaxis()
    axes.set_xlabel("wait before the first start (seconds)")
    axes.legend(loc="lower right", fontsize="small")
    axes.grid(axis="x", alpha=0.3)


def _utilization(axes: Any, report: dict[str, Any]) -> None:
    pools = report["pools"]
    axes.bar([p["pool"] for p in pools], [100 * (p["utilization"] or 0) for p in pools])
    axes.set_ylim(0, 100)
    axes.set_ylabel("capacity used (%)")
    for n, p in enumerate(pools):
        axes.annotate(f"{p['workers']} workers", (n, 2), ha="center", fontsize="small")
    axes.grid(axis="y", alpha=0.3)
