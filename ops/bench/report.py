"""The figures of the JSON files ``omdp bench ... --json`` writes, as Markdown: one table per
machine (CPU model, CPUs, memory from the file's ``machine`` block), each figure with the
command that produced it and its date. docs/benchmarks.md's "Current figures" tables have
this shape, so a new round of benchmarks regenerates them.

A figure is a target's verdict (``targets``: every benchmark an issue's target speaks of
writes them) or, for a benchmark without targets, its headline numbers (``HEADLINES``).
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any


class BenchFileError(ValueError):
    """A file that is not a benchmark's JSON: its path and the reason."""


@dataclass(frozen=True)
class Figure:
    """One row of a machine's table."""

    benchmark: str
    what: str
    value: str
    met: str            # "met", "not met" or "" (no target)
    command: str
    date: str


def number(v: Any) -> str:
    """A measured value as a reader wants it: 36.36 M, 45.8, 1,024; text as it is."""
    if isinstance(v, bool) or v is None:
        return "-" if v is None else str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if abs(v) >= 1e6:
            return f"{v / 1e6:,.2f} M"
        return f"{v:,.1f}" if abs(v) >= 10 else f"{v:.3g}"
    return str(v)


def _target_figure(t: dict[str, Any]) -> tuple[str, str, str]:
    """(what, value, met) of one ``targets`` entry, whichever benchmark wrote it."""
    what = str(t.get("target", "?"))
    where = ", ".join(str(t[k]) for k in ("master", "config", "feed") if t.get(k))
    if where:
        what += f" ({where})"
    value = t.get("measured", t.get("value"))
    shown = number(value)
    if "bound" in t:
        shown += f" ({'>=' if t.get('at_least') else '<='} {number(t['bound'])})"
    elif t.get("goal"):
        shown += f" ({t['goal']})"
    met = t.get("met")
    return what, shown, "" if met is None else ("met" if met else "not met")


def _collector(d: dict[str, Any]) -> list[tuple[str, str]]:
    c = d.get("collector_1_in_1600", {}).get("ns_per_record", {})
    return [("ns per record, 1 in 1,600 sampled (median)", number(c.get("median")))] if c else []


def _synth(d: dict[str, Any]) -> list[tuple[str, str]]:
    return [("messages per CPU-second", number(d.get("msgs_per_s_cpu"))),
            ("peak memory, MB", number(d.get("max_rss_mb")))]


def _soak(d: dict[str, Any]) -> list[tuple[str, str]]:
    slopes = [m.get("second_half_mib_per_min", 0.0) for m in (d.get("memory") or {}).values()]
    return [("largest memory slope over the second half, MiB/min", number(max(slopes)))] if slopes else []


def _elastic(d: dict[str, Any]) -> list[tuple[str, str]]:
    o = d.get("overhead") or {}
    return [(f"elastic level 1 ({k}) CPU per message / static engine's (median of runs)",
             f"{o[k]['ratio_median']:.3f}") for k in ("inline", "thread") if k in o]


def _scaling(d: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f"{n} cores: highest rate sustainable / kept up with",
             f"{s.get('sustainable') or 'none'} / {s.get('kept_up') or 'none'}")
            for n, s in (d.get("summary") or {}).items()]


HEADLINES: dict[str, Callable[[dict[str, Any]], list[tuple[str, str]]]] = {
    "collector": _collector, "synth": _synth, "soak": _soak, "elastic": _elastic, "scaling": _scaling}
"""The headline figures of the benchmarks whose JSON has no ``targets``."""


def benchmark_name(doc: dict[str, Any]) -> str:
    """The benchmark's name: its ``benchmark`` field, else the word after ``omdp bench``."""
    if doc.get("benchmark"):
        return str(doc["benchmark"])
    words = str(doc.get("command", "")).split()
    return words[2] if len(words) > 2 and words[:2] == ["omdp", "bench"] else "?"


def machine_header(machine: Any) -> str:
    """``CPU model, N CPUs, M GiB`` from a ``machine`` block (``omdp.runtime.machine`` keys, or
    ``bench transport``'s cpu / cpus); a block written as text stays as it is."""
    if not isinstance(machine, dict):
        return str(machine or "machine not recorded")
    cpu = machine.get("cpu_model") or machine.get("cpu") or "unknown CPU"
    cpus = machine.get("logical_cpus") or machine.get("cpus")
    parts = [str(cpu), f"{cpus} CPUs" if cpus else "CPUs not recorded"]
    mem = machine.get("memory_bytes")
    parts.append(f"{mem / 2**30:.1f} GiB" if mem else "memory not recorded")
    return ", ".join(parts)


def figures(doc: dict[str, Any], date: str) -> list[Figure]:
    """The rows one benchmark's JSON gives."""
    name = benchmark_name(doc)
    command = str(doc.get("command") or "command not recorded")
    rows = [(w, v, m) for w, v, m in map(_target_figure, doc.get("targets") or [])]
    if not rows and name in HEADLINES:
        rows = [(w, v, "") for w, v in HEADLINES[name](doc)]
    return [Figure(name, w, v, m, command, date) for w, v, m in rows]


def read_bench_file(path: Path) -> tuple[str, list[Figure]]:
    """(machine header, figures) of one file; ``BenchFileError`` when it is not a benchmark's JSON."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BenchFileError(f"{path}: not readable as JSON ({e})") from None
    if not isinstance(doc, dict) or "machine" not in doc:
        raise BenchFileError(f"{path}: not a benchmark's JSON (no machine block)")
    written = doc.get("written")
    date = str(written)[:10] if written else \
        datetime.fromtimestamp(path.stat().st_mtime, tz=timezone.utc).strftime("%Y-%m-%d")
    return machine_header(doc["machine"]), figures(doc, date)


def bench_files(paths: Iterable[Path]) -> list[Path]:
    """The ``*.json`` files of the folders given and the files given, in name order."""
    out: list[Path] = []
    for p in paths:
        out.extend(sorted(p.glob("*.json")) if p.is_dir() else [p])
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(by_machine: dict[str, list[Figure]]) -> str:
    """One ``### machine`` heading and table per machine, rows in benchmark order."""
    out: list[str] = []
    for machine, rows in by_machine.items():
        out += [f"### {machine}", "", "| benchmark | figure | value | target | command | date |",
                "|---|---|---|---|---|---|"]
        for f in sorted(rows, key=lambda f: (f.benchmark, f.date)):
            out.append(f"| {f.benchmark} | {_cell(f.what)} | {_cell(f.value)} | {f.met or '-'} | "
                       f"`{_cell(f.command)}` | {f.date} |")
        out.append("")
    return "\n".join(out)


def report(paths: Iterable[Path]) -> tuple[str, list[str]]:
    """(Markdown of every readable file, one line per file left out and why)."""
    by_machine: dict[str, list[Figure]] = {}
    skipped: list[str] = []
    for path in bench_files(paths):
        try:
            machine, rows = read_bench_file(path)
        except BenchFileError as e:
            skipped.append(str(e))
            continue
        if not rows:
            skipped.append(f"{path}: no figure this report knows how to read")
            continue
        by_machine.setdefault(machine, []).extend(rows)
    return markdown(by_machine), skipped
