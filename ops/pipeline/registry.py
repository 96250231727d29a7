"""The registry of every operator omdp ships, for the command line and the partitions.

``build_registry`` is the reference plans record (``REGISTRY_REF``): each partition process
calls it to find its operators by kind. Operator packages add themselves here; the OPRA
pipeline's kinds are:

  feed_sender        the replayer as a source (ops.pipeline.feed_sender)
  feed_handler       OPRA lines in, records routed per engine out (C; feedhandlers)
  decision_engine    books, NBBO, checks, 1-in-N samples and signals (C; decision_engines)
  latency_collector  per-hop latency of the samples, samples.parquet (C; omdp.metrics)
  signal_collector   signals.parquet (ops.pipeline.signal_collector)
  ingest_collector   ingest.parquet from the handlers' live line counters (omdp.metrics)
  market_stats, market_merge, market_sink   market-wide windows (ops.market, docs/market_stats.md)
"""
from __future__ import annotations

from decision_engines.elastic_operator import register_elastic_engine
from decision_engines.operator import OPRA_MSG, SIGNAL, register_decision_engines
from feedhandlers.feed_handler import ENGINE_PORTS, FeedHandlerParams, make_feed_handler
from feedhandlers.opra_record import OPRA_MSG_DTYPE
from omdp.metrics.ingest_operator import SLEEP_S as INGEST_SLEEP_S
from omdp.metrics.ingest_operator import IngestCollectorOperator, IngestCollectorParams
from omdp.metrics.latency_operator import register_latency_collector
from omdp.metrics.sample_identity import IdentityLayout
from omdp.registry import OperatorKind, Port, Registry
from omdp.seq_ops import register_seq_ops
from ops.market.operators import register_market
from ops.pipeline.feed_sender import FeedSender, FeedSenderParams
from ops.pipeline.signal_collector import SignalCollector

REGISTRY_REF = "ops.pipeline.registry:build_registry"

OPRA_SAMPLE_IDENTITY = IdentityLayout.from_dtype(
    OPRA_MSG_DTYPE, line="line", block_seq="block_seq", msg_seq="msg_seq", key="underlying_id", category="category")
"""Where a sampled OPRA record keeps what samples.parquet identifies it by."""


def register_pipeline(registry: Registry) -> None:
    """Add the OPRA pipeline's operators (the decision engine's record types first)."""
    register_decision_engines(registry)
    register_elastic_engine(registry)
    registry.add(OperatorKind("feed_sender", (), (), FeedSender, FeedSenderParams, native=False,
                              doc="replays the capture's lines into the handlers' rings or multicast, paced in C"))
    registry.add(OperatorKind("feed_handler", (), tuple(Port(p, OPRA_MSG.name) for p in ENGINE_PORTS),
                              make_feed_handler, FeedHandlerParams,
                              doc="A/B arbitration, gaps, decode, stamps, routing by underlying to port de<k> (C)"))
    register_latency_collector(registry, OPRA_MSG.name, OPRA_SAMPLE_IDENTITY)
    register_market(registry, OPRA_MSG.name)
    registry.add(OperatorKind("signal_collector", (Port("in", SIGNAL.name),), (), SignalCollector, native=False,
                              doc="every signal, to signals.parquet and the live stats segment"))
    registry.add(OperatorKind("ingest_collector", (), (), IngestCollectorOperator, IngestCollectorParams,
                              native=False, doc="per-line received/missed/duplicates/decode errors to ingest.parquet",
                              alone=f"sleeps up to {INGEST_SLEEP_S * 1000:g} ms between its looks"))


def build_registry() -> Registry:
    """All registered operator kinds and record types."""
    registry = Registry(ref=REGISTRY_REF)
    register_seq_ops(registry)
    register_pipeline(registry)
    return registry
