"""The nightly feeds job: a day's captures -> the tick table (``ticks/``, partitioned by date
and line) and the feed's summary tables in ``reports/<date>/feeds_*``.

Each Spark task takes a group of capture files (of about equal bytes, a few groups per core,
``task_groups``) and, file by file, memory-maps it,
decodes it a chunk of packets at a time with the C decoder straight into the tick table's
Arrow columns (``tick_arrow``), writes the chunk's batch to the file's Parquet tick
file and counts what the profiles need from the same batch (``capture_decode``,
``feed_tally``); the task hands back one row per file saying how it went and its files'
counts. Writing from Arrow on the executor keeps the ticks out of the JVM's row path, which
costs several times the decoding; counting there spares reading the tick table back. A
rerun for a date replaces that date's tick and windows files and no others. Spark then
aggregates the 10 ms windows into the rate profiles; the rest is finished on the driver.

Run it as ``omdp analytics feeds --date D`` or ``spark-submit ops/spark/feeds/feeds_job.py --date D``.
"""
from __future__ import annotations

import argparse
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ops.spark.common.data_layout import DEFAULT_DATA_DIR, CaptureFile, DataLayout, check_date
from ops.spark.feeds.capture_decode import DEFAULT_CHUNK_PACKETS, FileOutcome, write_capture_ticks
from ops.spark.feeds.feed_profile import (
    ONE_X_PPS,
    TICK_WINDOWS_READ_SCHEMA,
    category_mix,
    messages_per_packet,
    rate_per_second,
    rate_profile,
    rate_windows,
    top_underlyings,
)
from ops.spark.common.file_problems import FileProblem, report_problems
from ops.spark.feeds.manifest_roots import ManifestError, load_root_map
from ops.spark.common.report_schemas import (
    FEEDS_CATEGORY_MIX,
    FEEDS_DAY,
    FEEDS_FILES,
    FEEDS_MESSAGES_PER_PACKET,
    FEEDS_RATE_PER_SECOND,
    FEEDS_RATE_PROFILE,
    FEEDS_TOP_UNDERLYINGS,
    SKIPPED_FILES,
)
from ops.spark.common.report_tables import write_rows, write_table
from ops.spark.common.session import build_session
from ops.spark.common.task_map import map_tasks
from ops.spark.feeds.tick_table import TICK_SCHEMA

JOB = "feeds"


@dataclass(frozen=True)
class FeedsOptions:
    """What the feeds job decodes and how."""

    copies: str = "A"
    chunk_packets: int = DEFAULT_CHUNK_PACKETS
    top_underlyings: int = 20
    tasks_per_core: int = 4


@dataclass
class DecodedDay:
    """What the decode stage hands the driver: each file's outcome (in file order), packets
    per (line, messages in the packet) and messages per (underlying, category)."""

    outcomes: list[FileOutcome]
    messages_per_packet: Counter = field(default_factory=Counter)
    mix: Counter = field(default_factory=Counter)


@dataclass
class FeedsResult:
    """What one night's feeds job did."""

    date: str
    files: int
    files_skipped: int
    packets: int
    messages: int
    seconds: float
    decode_seconds: float
    decode_cpu_seconds: float    # the decode tasks' CPU: read, decode, write the tick files
    write_cpu_seconds: float     # of it, writing the tick files (Parquet)
    formats: dict[str, int] = field(default_factory=dict)   # files by their feed format ("obi-v6", ...)
    day: dict = field(default_factory=dict)
    problems: list[FileProblem] = field(default_factory=list)
    tables: dict[str, Path] = field(default_factory=dict)


def task_groups(sizes: list[int], tasks: int) -> list[list[int]]:
    """Indices of ``sizes`` in at most ``tasks`` groups of about equal total size: largest
    first, each to the group with the least so far (none left empty)."""
    groups: list[list[int]] = [[] for _ in range(max(1, min(tasks, len(sizes))))]
    load = [0] * len(groups)
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        g = min(range(len(groups)), key=lambda k: (load[k], len(groups[k])))
        groups[g].append(i)
        load[g] += sizes[i]
    return [g for g in groups if g]


def decode_captures(
    spark: SparkSession,
    files: list[CaptureFile],
    date: str,
    root_map: dict[str, str],
    layout: DataLayout,
    chunk_packets: int,
    tasks_per_core: int = FeedsOptions.tasks_per_core,
) -> DecodedDay:
    """Decode ``files`` into the tick table and the tick-windows table on the executors;
    each task writes the files of a group of capture files and hands back one FileOutcome
    row per file and the group's counts, summed.

    Groups of about equal bytes, ``tasks_per_core`` per executor core (one file per task
    when there are fewer files): a Python task costs tens of milliseconds of scheduling and
    hand-over whatever it does, which with one task per file was a fifth of the stage's wall
    time on two cores (docs/benchmarks.md); a few tasks per core still let a core that
    finishes early take the next group."""
    if not files:
        return DecodedDay([])
    groups = task_groups([f.size for f in files], tasks_per_core * spark.sparkContext.defaultParallelism)
    ticks, windows = str(layout.ticks()), str(layout.tick_windows())

    def decode_group(group: list[CaptureFile]) -> dict:
        rows, per_packet, mix = [], Counter(), Counter()
        for f in group:
            outcome, tally = write_capture_ticks(f, date, root_map, Path(ticks), Path(windows), chunk_packets)
            rows.append(outcome.as_dict())
            per_packet.update({(f.line, k): n for k, n in tally.messages_per_packet.items()})
            mix.update(tally.mix)
        return {"outcomes": rows, "messages_per_packet": per_packet, "mix": mix}

    day = DecodedDay([])
    by_path = {}
    for done in map_tasks(spark, [[files[i] for i in g] for g in groups], decode_group):
        by_path.update((r["path"], FileOutcome(**r)) for r in done["outcomes"])
        day.messages_per_packet.update(done["messages_per_packet"])
        day.mix.update(done["mix"])
    day.outcomes = [by_path[f.path] for f in files]
    return day


def replace_date(table_root: Path, date: str, keep: set[Path]) -> None:
    """Make the date's partition of the table at ``table_root`` hold exactly the files of
    ``keep``: remove files (and line directories) an earlier run left that this one did not
    write, and temporary files of failed task attempts. Other dates are not touched."""
    day = table_root / f"date={date}"
    if not day.is_dir():
        return
    for line_dir in day.iterdir():
        for f in line_dir.iterdir() if line_dir.is_dir() else [line_dir]:
            if f not in keep:
                f.unlink()
        if line_dir.is_dir() and not any(line_dir.iterdir()):
            line_dir.rmdir()


def read_ticks(spark: SparkSession, layout: DataLayout, date: str) -> DataFrame:
    """The tick table of one date (partition-pruned read with the explicit schema)."""
    day = layout.ticks() / f"date={date}"
    if not day.is_dir():
        return spark.createDataFrame([], TICK_SCHEMA)
    return spark.read.schema(TICK_SCHEMA).option("basePath", str(layout.ticks())).parquet(str(day))


def read_tick_windows(spark: SparkSession, layout: DataLayout, date: str) -> DataFrame:
    """The 10 ms windows of one date's capture files (TICK_WINDOWS_READ_SCHEMA)."""
    day = layout.tick_windows() / f"date={date}"
    if not day.is_dir():
        return spark.createDataFrame([], TICK_WINDOWS_READ_SCHEMA)
    return spark.read.schema(TICK_WINDOWS_READ_SCHEMA).option("basePath", str(layout.tick_windows())).parquet(str(day))


def _day_row(profile: list[dict], date: str, outcomes: list[FileOutcome]) -> dict:
    """The FEEDS_DAY row from the all-lines profile rows and the files' outcomes."""
    total = {r["window_ms"]: r for r in profile if r["line"] is None}
    one_s = total.get(1_000, {})
    row = {
        "date": date,
        "lines": len({o.line for o in outcomes if o.messages}),
        "files": len(outcomes),
        "files_skipped": sum(o.status == "skipped" for o in outcomes),
        "packets": one_s.get("packets", 0),
        "messages": one_s.get("messages", 0),
        "bytes": one_s.get("bytes", 0),
        "bad_packets": sum(o.bad_packets for o in outcomes),
        "bad_checksums": sum(o.bad_checksums for o in outcomes),
        "gaps": sum(o.gaps for o in outcomes),
        "gap_messages": sum(o.gap_messages for o in outcomes),
        "messages_per_packet": one_s["messages"] / one_s["packets"] if one_s.get("packets") else None,
        "first_ns": one_s.get("first_ns"),
        "last_ns": one_s.get("last_ns"),
        "span_s": (one_s["last_ns"] - one_s["first_ns"]) / 1e9 if one_s.get("first_ns") is not None else None,
        "mean_pps": one_s.get("mean_pps"),
        "mean_mps": one_s.get("mean_mps"),
    }
    for ms, tag in ((1_000, "1s"), (100, "100ms"), (10, "10ms")):
        row[f"peak_{tag}_pps"] = total.get(ms, {}).get("peak_pps")
        row[f"peak_{tag}_mps"] = total.get(ms, {}).get("peak_mps")
    row["rate_x"] = row["mean_pps"] / ONE_X_PPS if row["mean_pps"] is not None else None
    row["peak_1s_rate_x"] = row["peak_1s_pps"] / ONE_X_PPS if row["peak_1s_pps"] is not None else None
    return row


def run_feeds(spark: SparkSession, layout: DataLayout, date: str, options: FeedsOptions = FeedsOptions()) -> FeedsResult:
    """Decode the day's captures, write the tick table and the feeds tables."""
    started = time.perf_counter()
    check_date(date)
    out = layout.reports(date)
    out.mkdir(parents=True, exist_ok=True)
    problems: list[FileProblem] = []
    files = layout.capture_files(date, options.copies)
    root_map: dict[str, str] = {}
    if files:
        try:
            root_map = load_root_map(layout.manifest(date))
        except ManifestError as exc:
            problems.append(FileProblem(str(layout.manifest(date)), "skipped", f"{exc}; underlyings unknown"))
    t0 = time.perf_counter()
    decoded = decode_captures(spark, files, date, root_map, layout, options.chunk_packets, options.tasks_per_core)
    decode_seconds = time.perf_counter() - t0
    outcomes = decoded.outcomes
    written = [Path(o.output) for o in outcomes if o.output]
    replace_date(layout.ticks(), date, set(written))
    replace_date(layout.tick_windows(), date, {layout.tick_windows() / p.relative_to(layout.ticks()) for p in written})
    for o in outcomes:
        if o.status != "ok":
            problems.append(FileProblem(o.path, o.status, o.error))

    tables: dict[str, Path] = {}
    tables["feeds_files"] = write_rows([{**o.as_dict(), "date": date} for o in outcomes], out, "feeds_files", FEEDS_FILES)
    # Not cached: the windows are small, and each of the two jobs reads them once.
    windows = rate_windows(read_tick_windows(spark, layout, date))
    profile = sorted(
        (r.asDict() for r in rate_profile(windows, date).collect()),
        key=lambda r: (r["line"] is not None, r["line"] or 0, -r["window_ms"]),
    )
    tables["feeds_rate_profile"] = write_rows(profile, out, "feeds_rate_profile", FEEDS_RATE_PROFILE)
    tables["feeds_rate_per_second"] = write_table(
        rate_per_second(windows, date).orderBy(F.col("line").asc_nulls_first(), "second_ns"),
        out,
        "feeds_rate_per_second",
        FEEDS_RATE_PER_SECOND,
    )
    day = _day_row(profile, date, outcomes)
    tables["feeds_day"] = write_rows([day], out, "feeds_day", FEEDS_DAY)
    tables["feeds_messages_per_packet"] = write_rows(
        messages_per_packet(decoded.messages_per_packet, date), out, "feeds_messages_per_packet", FEEDS_MESSAGES_PER_PACKET
    )
    counts = decoded.mix
    tables["feeds_category_mix"] = write_rows(category_mix(counts, date), out, "feeds_category_mix", FEEDS_CATEGORY_MIX)
    tables["feeds_top_underlyings"] = write_rows(
        top_underlyings(counts, date, options.top_underlyings), out, "feeds_top_underlyings", FEEDS_TOP_UNDERLYINGS
    )
    tables["feeds_skipped_files"] = write_rows([p.row(date, JOB) for p in problems], out, "feeds_skipped_files", SKIPPED_FILES)
    report_problems(date, JOB, problems)
    return FeedsResult(
        date=date,
        files=len(files),
        files_skipped=day["files_skipped"],
        packets=day["packets"],
        messages=day["messages"],
        seconds=time.perf_counter() - started,
        decode_seconds=decode_seconds,
        decode_cpu_seconds=sum(o.cpu_s for o in outcomes),
        write_cpu_seconds=sum(o.write_cpu_s for o in outcomes),
        formats=dict(Counter(o.feed for o in outcomes if o.feed)),
        day=day,
        problems=problems,
        tables=tables,
    )


def main(argv: list[str] | None = None) -> int:
    """``spark-submit ops/spark/feeds/feeds_job.py --date D [--data DIR]``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--date", required=True)
    parser.add_argument("--data", default=DEFAULT_DATA_DIR)
    parser.add_argument("--master", default=None, help="default: spark-submit's, else local[*]")
    parser.add_argument("--copies", default="A", choices=["A", "B"])
    parser.add_argument("--chunk-packets", type=int, default=DEFAULT_CHUNK_PACKETS)
    parser.add_argument("--top-underlyings", type=int, default=20)
    args = parser.parse_args(argv)
    spark = build_session("omdp-feeds", args.master)
    try:
        result = run_feeds(
            spark,
            DataLayout(Path(args.data)),
            args.date,
            FeedsOptions(copies=args.copies, chunk_packets=args.chunk_packets, top_underlyings=args.top_underlyings),
        )
    finally:
        spark.stop()
    print(
        f"feeds {result.date}: {result.files} files ({result.files_skipped} skipped), "
        f"{result.packets} packets, {result.messages} messages"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
