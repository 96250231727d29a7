"""The registry of every operator omdp ships, for the command line and the partitions.

``build_registry`` is the reference plans record (``REGISTRY_REF``): each partition process
calls it to find its operators by kind. Operator packages add themselves here.
"""
from __future__ import annotations

from decision_engines.operator import register_decision_engines
from omdp.registry import Registry
from omdp.seq_ops import register_seq_ops

REGISTRY_REF = "ops.pipeline.registry:build_registry"


def build_registry() -> Registry:
    """All registered operator kinds and record types."""
    registry = Registry(ref=REGISTRY_REF)
    register_seq_ops(registry)
    register_decision_engines(registry)
    return registry
