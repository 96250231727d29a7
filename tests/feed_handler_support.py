"""What the feed handler's in-process tests share: the replayer's frame header, to write
frames into a handler's ring, and an operator that keeps every record the handler emits."""
from __future__ import annotations

import struct

import numpy as np

from feedhandlers.opra_record import OPRA_MSG_DTYPE
from omdp.operator import Operator, OperatorContext

FRAME = struct.Struct("<qqHBBHH")  # omdp_replay_frame_t


class Keep(Operator):
    """Keeps copies of every record it gets."""

    def __init__(self, params: object, ctx: OperatorContext) -> None:
        super().__init__(params, ctx)
        self.parts: list[np.ndarray] = []

    def process_batch(self, records: np.ndarray, port: str) -> None:
        self.parts.append(records.copy())

    def records(self) -> np.ndarray:
        return np.concatenate(self.parts) if self.parts else np.zeros(0, OPRA_MSG_DTYPE)
