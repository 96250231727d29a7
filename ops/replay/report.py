"""Text renderings of a replay's status for the terminal: the progress bar's postfix and
the summary printed when a replay ends."""
from __future__ import annotations

from omdp.units import fmt_ns
from ops.replay.config import line_ranges
from ops.replay.rates import PAPER_1X_PPS
from ops.replay.status import PacingStatus, ReplayStatus


def pacing_line(p: PacingStatus) -> str:
    return (f"pacing error (sent - intended): p50 {fmt_ns(p.p50_ns)}, p99 {fmt_ns(p.p99_ns)}, "
            f"p99.9 {fmt_ns(p.p999_ns)}, max {fmt_ns(p.max_ns)} (n={p.count:,})")


def postfix(st: ReplayStatus) -> str:
    """One short line for the progress bar."""
    ach = f"{st.achieved_x:.2f}x" if st.achieved_x is not None else "-"
    if st.recent_pps is not None:
        ach = f"{st.recent_pps / PAPER_1X_PPS:.2f}x now, {ach}"
    tgt = f"{st.target_x:.2f}x" if st.target_x is not None else "-"
    warn = " BEHIND" if any(w.startswith("target rate not achieved") for w in st.warnings) else ""
    return f"{ach}/{tgt} p99 {fmt_ns(st.pacing.p99_ns)} max {fmt_ns(st.pacing.max_ns)}{warn}"


def summary(st: ReplayStatus) -> str:
    """The multi-line report of a run."""
    out = []
    mpp = f", {st.messages_per_packet:.1f} per packet" if st.messages_per_packet else ""
    out.append(f"run {st.run_id} {st.state}: {st.packets_sent:,} packets ({st.messages_sent:,} messages{mpp}) "
               f"in {st.elapsed_s:.2f} s, {st.laps} lap(s), copies {','.join(st.copies)} -> {st.target}")
    if st.target_pps is not None:
        ach_pps = f"{st.achieved_pps:,.0f} pps ({st.achieved_x:.2f}x)" if st.achieved_pps is not None else "n/a"
        frac = f", {st.achieved_fraction * 100:.3f}% of schedule" if st.achieved_fraction is not None else ""
        mps = ""
        if st.messages_per_packet and st.achieved_pps:
            mps = f"; {st.achieved_pps * st.messages_per_packet:,.0f} messages/s"
        due = ""
        if st.elapsed_s > 0 and st.packets_due:
            due = f" (the schedule asked {st.packets_due / st.elapsed_s:,.0f} pps over this time)"
        out.append(f"rate {st.rate}: target {st.target_pps:,.0f} pps ({st.target_x:.2f}x) averaged over a lap{due}, "
                   f"achieved {ach_pps}{frac}{mps}")
    out.append(pacing_line(st.pacing))
    for s in st.senders:
        where = f"CPU {s.cpu}" if s.cpu is not None else "unpinned"
        sched = f"SCHED_FIFO {s.rt_priority}" if s.realtime else f"SCHED_{s.policy.upper()}"
        if s.memory_locked:
            sched += ", memory locked"
        out.append(f"sender {s.index} ({where}, {sched}, lines {line_ranges(s.lines)}): {s.cpu_s:.2f} s of CPU, "
                   f"preempted {s.preemptions:,} times by other tasks")
    if st.lines:
        out.append(f"{'line':>4} {'packets':>20} {'messages':>22} {'dropped':>14} {'errors':>8} {'resets':>6}")
        for ln in st.lines:
            pk = "/".join(f"{v:,}" for v in ln.packets.values())
            ms = "/".join(f"{v:,}" for v in ln.messages.values())
            dr = "/".join(f"{v:,}" for v in ln.dropped.values())
            er = sum(ln.send_errors.values())
            out.append(f"{ln.line:>4} {pk:>20} {ms:>22} {dr:>14} {er:>8,} {ln.control_packets:>6,}")
        out.append(f"(per copy {'/'.join(st.copies)})")
    for w in st.warnings:
        out.append(f"WARNING: {w}")
    if st.error:
        out.append(f"ERROR: {st.error}")
    if st.intended_parquet:
        out.append(f"intended send times: {st.intended_parquet}")
    return "\n".join(out)
