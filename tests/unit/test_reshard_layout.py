"""The re-sharding marker's record type: numbered in record.h with the others, distinct from them
(its layout is pinned with every record's by tests/unit/test_c_layout.py)."""
from __future__ import annotations

from omdp.native import lib
from omdp.record import RT_BENCH, RT_OPRA_MSG, RT_RESHARD, RT_SEQ, RT_SIGNAL


def test_record_type_is_its_own() -> None:
    assert RT_RESHARD == lib.OMDP_RT_RESHARD == 5
    assert RT_RESHARD not in (RT_OPRA_MSG, RT_SIGNAL, RT_BENCH, RT_SEQ)
