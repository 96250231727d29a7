"""The report's figures as PNG files (matplotlib, no display): the latency breakdown as
bars per hop (the paper's Figure 6), latency against offered rate per sweep (Figures 5, 8),
the day's rate profile and the messages-per-packet histogram.

Each function takes rows as plain dicts (the report tables are small) and writes one PNG,
or none when it has nothing to draw (it returns None and the page shows no empty panel).
Latency axes are logarithmic: one night holds hops of hundreds of ns and queues of seconds.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from omdp.metrics.definitions import COMPONENT_HOPS  # noqa: E402

_DPI = 110


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=_DPI)
    plt.close(fig)
    return path


def _empty(path: Path, title: str, why: str) -> None:
    """Nothing to draw (``title``: ``why``, which the page's tables say): no figure, and
    none left from an earlier rendering of the night."""
    path.unlink(missing_ok=True)


def run_labels(rows: list[dict]) -> dict[str, str]:
    """A bar's label per run: config and rate, and the run id, so two runs of one
    configuration and rate (a rerun, two sweeps) are told apart and found in the tables."""
    return {r["run_id"]: f"{r['config']} {r['rate_x']:g}x\n{r['run_id']}" for r in rows}


def plot_breakdown(breakdown: list[dict], path: Path) -> Path | None:
    """Bars of the mean latency per pipeline hop side by side, a group per run, on a log
    scale (stacked bars would hide a 200 ns hop under a 4 s queue; the hop means still add
    up to the mean end to end from ``fh_in``, in the tables)."""
    title = "Latency breakdown: mean per hop (log scale)"
    means: dict[str, dict[str, float]] = {}
    for r in breakdown:
        means.setdefault(r["run_id"], {})[r["hop"]] = r["mean_ns"]
    labels = run_labels(breakdown)
    order = {r["run_id"]: (r["config"], r["rate_x"], r["run_id"]) for r in breakdown}
    runs = [k for k, v in means.items() if all(v.get(h.table_name) is not None for h in COMPONENT_HOPS)]
    if not runs:
        return _empty(path, title, "no runs with every hop stamped")
    runs.sort(key=lambda k: order[k])
    fig, ax = plt.subplots(figsize=(min(12.5, max(6.0, 0.9 * len(runs) + 2)), 5.0))
    width = 0.8 / len(COMPONENT_HOPS)
    for i, hop in enumerate(COMPONENT_HOPS):
        heights = [max(means[k][hop.table_name], 1.0) / 1_000 for k in runs]  # a log axis has no 0
        ax.bar([x + (i - (len(COMPONENT_HOPS) - 1) / 2) * width for x in range(len(runs))], heights, width, label=hop.label)
    ax.set_yscale("log")
    ax.set_xticks(range(len(runs)), [labels[k] for k in runs], fontsize=7, rotation=30, ha="right")
    ax.set_ylabel("mean latency (µs, log scale)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return _save(fig, path)


def plot_sweeps(runs: list[dict], path: Path) -> Path | None:
    """Per sweep: end-to-end latency (p50 and p99, from ``intended`` and from ``fh_in``)
    against the offered rate, unsustainable rates marked x; and achieved against offered."""
    title = "Sustainable-rate sweeps"
    sweeps: dict[str, list[dict]] = {}
    for r in runs:
        if r["sweep_id"]:
            sweeps.setdefault(r["sweep_id"], []).append(r)
    if not sweeps:
        return _empty(path, title, "no sweep runs this night")
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))  # 1,210 px at 110 dpi: within the page
    for sid, rows in sorted(sweeps.items()):
        rows.sort(key=lambda r: r["rate_x"])
        x = [r["rate_x"] for r in rows]
        for col, style in (("e2e_intended_p50_ns", "o-"), ("e2e_intended_p99_ns", "s--"), ("e2e_fh_p50_ns", ".:")):
            pts = [(xi, r[col] / 1_000) for xi, r in zip(x, rows) if r[col] is not None]
            if pts:
                ax.plot(*zip(*pts), style, label=f"{sid} {col.replace('_ns', '').replace('e2e_', '')}")
        bad = [(xi, r["e2e_intended_p50_ns"] / 1_000) for xi, r in zip(x, rows) if r["sustainable"] is False and r["e2e_intended_p50_ns"]]
        if bad:
            ax.plot(*zip(*bad), "kx", markersize=9)
        ax2.plot([r["target_pps"] / 1_000 for r in rows], [r["achieved_pps"] / 1_000 for r in rows], "o-", label=sid)
    ax.set_yscale("log")
    ax.set_xlabel("offered rate (x 24,000 packets/s)")
    ax.set_ylabel("end-to-end latency (µs); x = not sustainable")
    ax.set_title(title)
    ax.legend(fontsize=7)
    top = max(r["target_pps"] for rows in sweeps.values() for r in rows) / 1_000
    ax2.plot([0, top], [0, top], color="grey", linewidth=0.8, label="achieved = offered")
    ax2.set_xlabel("offered (thousand packets/s)")
    ax2.set_ylabel("achieved (thousand packets/s)")
    ax2.set_title("Replayer: achieved vs offered")
    ax2.legend(fontsize=7)
    return _save(fig, path)


def plot_rate_profile(per_second: list[dict], profile: list[dict], path: Path) -> Path | None:
    """Messages/s and packets/s per second of each capture day (all lines), with the 100 ms
    and 10 ms peaks as dashed lines; a night covering several capture dates draws each from
    its own first packet, named by its date."""
    title = "Rate profile (all lines)"
    dates = sorted({r["date"] for r in per_second if r["line"] is None})
    if not dates:
        return _empty(path, title, "no captures decoded this night")
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(10, 5.5), sharex=True)
    for date in dates:
        total = sorted((r for r in per_second if r["line"] is None and r["date"] == date), key=lambda r: r["second_ns"])
        x = [(r["second_ns"] - total[0]["second_ns"]) / 1e9 for r in total]
        tag = f"{date}, " if len(dates) > 1 else ""
        ax.plot(x, [r["messages"] for r in total], linewidth=0.8, drawstyle="steps-post", label=f"{tag}per 1 s")
        ax2.plot(x, [r["packets"] for r in total], linewidth=0.8, drawstyle="steps-post",
                 color="tab:orange" if len(dates) == 1 else None, label=f"{tag}per 1 s")
        for p in profile:
            if p["line"] is None and p["date"] == date and p["window_ms"] in (100, 10):
                color = "tab:red" if p["window_ms"] == 10 else "tab:green"
                ax.axhline(p["peak_mps"], linestyle="--", linewidth=0.8, color=color,
                           label=f"{tag}peak over {p['window_ms']} ms")
                ax2.axhline(p["peak_pps"], linestyle="--", linewidth=0.8, color=color,
                            label=f"{tag}peak over {p['window_ms']} ms")
    ax2.axhline(24_000, color="grey", linewidth=0.8, label="1x = 24,000 packets/s")
    ax.set_ylabel("messages/s")
    ax2.set_ylabel("packets/s")
    ax2.set_xlabel("seconds since the first packet")
    ax.set_title(title)
    ax.legend(fontsize=7)
    ax2.legend(fontsize=7)
    return _save(fig, path)


def plot_messages_per_packet(histogram: list[dict], path: Path) -> Path | None:
    """Packets by their message count (all lines, every capture date of the night)."""
    title = "Messages per packet (all lines)"
    packets: dict[int, int] = {}
    for r in histogram:
        if r["line"] is None:
            packets[r["messages_per_packet"]] = packets.get(r["messages_per_packet"], 0) + r["packets"]
    if not packets:
        return _empty(path, title, "no captures decoded this night")
    fig, ax = plt.subplots(figsize=(7, 3.2))
    counts = sorted(packets)
    ax.bar(counts, [packets[k] for k in counts])
    ax.set_xlabel("messages in the packet")
    ax.set_ylabel("packets")
    ax.set_title(title)
    return _save(fig, path)
