"""``omdp bench synth``: how fast ``omdp synth`` writes a capture.

Generates a capture (into a temporary directory unless ``--data``) and reports messages
per second of wall time and of the process's CPU time (the CPU figure is what one core
does, whatever else the machine runs), for the whole run and after setup, with the CPU
and wall seconds of every stage (market model, records, merge, C encoder, pcap writing).

The command line is ``ops/cli/bench/synth.py``; this module only measures.
"""
from __future__ import annotations

import resource
import time
from pathlib import Path


def measure_synth(data: Path, seconds: float, rate: float, seed: int, num_lines: int) -> dict:
    """One generation, timed."""
    from ops.synth.generator import SynthConfig, synthesize

    w0, c0 = time.perf_counter(), time.process_time()
    res = synthesize(SynthConfig(data=data, seconds=seconds, rate=rate, seed=seed, num_lines=num_lines, progress=False,
                                 force=True))
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    r = res.manifest.rate
    return {
        "seconds": seconds, "rate": rate, "seed": seed, "lines": num_lines,
        "packets": r.packets, "messages": r.messages, "messages_per_packet": round(r.messages_per_packet, 3),
        "packets_per_second_in_capture": round(r.packets_per_second, 1),
        "wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "setup_wall_s": round(res.setup_s, 3),
        "run_wall_s": round(res.elapsed_s, 3), "run_cpu_s": round(res.cpu_s, 3),
        "msgs_per_s_wall": round(r.messages / wall), "msgs_per_s_cpu": round(r.messages / cpu),
        "msgs_per_s_run_cpu": round(r.messages / res.cpu_s),
        "stages": res.stages,
        "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def measure_synth_today(data: Path, seconds: float, rate: float | None, seed: int, underlyings: int | None,
                        series: int | None) -> dict:
    """One generation of today's market (``omdp synth --market today``), timed."""
    from ops.synth.today.generator import TodayConfig, synthesize_today

    given = {k: v for k, v in (("rate", rate), ("underlyings", underlyings), ("series", series)) if v is not None}
    w0, c0 = time.perf_counter(), time.process_time()
    res = synthesize_today(TodayConfig(data=data, seconds=seconds, seed=seed, progress=False, **given))
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    m = res.manifest
    r = m.rate
    return {
        "market": "today", "seconds": seconds, "rate": r.multiplier, "seed": seed, "lines": len(m.lines),
        "underlyings": m.universe.underlyings, "series": m.universe.series,
        "packets": r.packets, "messages": r.messages, "messages_per_packet": round(r.messages_per_packet, 3),
        "packets_per_second_in_capture": round(r.packets_per_second, 1),
        "wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "setup_wall_s": round(res.setup_s, 3),
        "run_wall_s": round(res.elapsed_s, 3), "run_cpu_s": round(res.cpu_s, 3),
        "msgs_per_s_wall": round(r.messages / wall), "msgs_per_s_cpu": round(r.messages / cpu),
        "msgs_per_s_run_cpu": round(r.messages / res.cpu_s),
        "stages": res.stages,
        "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }
