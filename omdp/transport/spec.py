"""A channel's description: which medium carries it and its knobs.

The defaults below are the only place these defaults live (docs/architecture.md "Transports and knobs");
the C side's defaults are checked against them by a test. Paper defaults: queue 128 slots of
64 KiB, mutex on; the tuned OMDP setting is queue 32, a packet's worth of records, mutex off.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

TransportName = Literal["fused", "vega-shm", "vega-tcp", "vega-ib", "tcp", "zmq", "mpqueue", "mpi"]
WaitStrategy = Literal["spin", "spin-yield", "spin-block"]
FullPolicy = Literal["block", "drop"]

DEFAULT_QUEUE_SIZE = 128
DEFAULT_MAX_MESSAGE = 65536
DEFAULT_MUTEX = True
DEFAULT_WAIT: WaitStrategy = "spin"
DEFAULT_ON_FULL: FullPolicy = "block"
DEFAULT_SIGNAL_EVERY = 16


class ChannelSpec(BaseModel):
    """One point-to-point channel: the medium and its knobs.

    Validation errors name the field and the reason (pydantic), e.g. a queue size that is
    not a power of two.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    transport: TransportName = "vega-shm"
    queue_size: int = Field(DEFAULT_QUEUE_SIZE, ge=2, le=1 << 20, description="slots in the ring, a power of two")
    max_message: int = Field(DEFAULT_MAX_MESSAGE, ge=8, le=1 << 26, description="largest message in bytes")
    mutex: bool = Field(DEFAULT_MUTEX, description="serialize concurrent senders of one channel")
    wait: WaitStrategy = Field(DEFAULT_WAIT, description="how an empty receiver or a full sender waits")
    on_full: FullPolicy = Field(DEFAULT_ON_FULL, description="block (back-pressure) or drop (counted)")
    signal_every: int = Field(DEFAULT_SIGNAL_EVERY, ge=1, le=4096, description="vega-ib: a completion every N writes")

    @field_validator("queue_size")
    @classmethod
    def _power_of_two(cls, v: int) -> int:
        if v & (v - 1):
            raise ValueError(f"queue_size must be a power of two, got {v}")
        return v
