"""A partition's operators and channel ends in the run's stats segment, while it runs.

The live dashboard's operators panel reads the stats segment; before this only the entries
an operator registered itself (the latency collector) were there, so a run of seven
operators showed one. The partition's control thread publishes, at each heartbeat, what
the C loop keeps atomically and so can be read beside it: per operator batches and bytes
in and out, per channel end frames, bytes, full-ring waits and drops. An operator's own
counters are not atomic; they reach the run's report (run.json) when the loop has ended.
"""
from __future__ import annotations

import logging

from omdp.metrics.stats_segment import OperatorCounters, StatsReader, StatsSegmentError, StatsWriter
from omdp.runtime.partition import Partition

log = logging.getLogger("omdp.partition")

OPERATOR_COUNTERS = ("batches_in", "bytes_in", "batches_out", "bytes_out")
CHANNEL_COUNTERS = ("frames", "bytes", "full_waits", "drops", "too_big", "bad_frames")


class LiveOperatorStats:
    """The entries of one partition; ``publish`` from any thread, ``close`` at the end."""

    def __init__(self, writer: StatsWriter, partition: Partition, partition_name: str, cpu: int = -1) -> None:
        self._writer = writer
        self._partition = partition
        with StatsReader(writer.run_id) as reader:
            taken = {e["name"] for e in reader.operators()}
        self._ops: dict[str, OperatorCounters] = {}
        self._chans: dict[str, OperatorCounters] = {}
        for name in partition.op_stats():
            if name not in taken:  # an operator that publishes its own entry (the collector) keeps it
                self._ops[name] = writer.register_operator(name, "operator", OPERATOR_COUNTERS, cpu=cpu)
        for name in partition.channel_stats():
            self._chans[name] = writer.register_operator(f"{name} @ {partition_name}", "channel", CHANNEL_COUNTERS,
                                                         cpu=cpu)

    @classmethod
    def attach(cls, run_id: str, partition: Partition, partition_name: str, cpu: int = -1) -> LiveOperatorStats | None:
        """The entries in the run's segment, or None (logged) where the run has none (a
        topology run without the pipeline's stats) or it is full."""
        try:
            writer = StatsWriter.attach(run_id)
        except StatsSegmentError as e:
            log.info("no live operator figures: %s", e)
            return None
        try:
            return cls(writer, partition, partition_name, cpu)
        except StatsSegmentError as e:
            log.warning("no live operator figures: %s", e)
            writer.close()
            return None

    def publish(self) -> None:
        """Publish every entry's counters now."""
        for name, figures in self._partition.op_stats().items():
            if name in self._ops:
                self._ops[name].publish(figures)
        for name, figures in self._partition.channel_stats().items():
            if name in self._chans:
                self._chans[name].publish({k: figures[k] for k in CHANNEL_COUNTERS})

    def close(self) -> None:
        """Publish the last figures and mark the entries closed (they stay readable)."""
        try:
            self.publish()
            for entry in (*self._ops.values(), *self._chans.values()):
                entry.close()
        finally:
            self._writer.close()
