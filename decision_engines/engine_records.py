"""numpy dtypes of the engine's exchange structs with pricing (engine.h): series snapshots,
groups and the per-series limits the hot path reads, built from the compiled C structs."""
from __future__ import annotations

import numpy as np

from omdp.c_layout import c_dtype

NO_SLOT = 0xFFFFFFFF
"""``twin`` / ``group`` of a series without one."""

EXCHANGES = b"ABCDEGHIJMNPQSTUVWXZ"
"""OPRA's participant exchanges (spec 8.1; FAST V2's six A B C I P X among them), in the
engine's lane order, which is its NBBO tie order (native/src/engine/engine_exchanges.c)."""

SERIES_INFO_DTYPE = c_dtype("omdp_engine_series_info_t")

NBBO_CHANGE_DTYPE = c_dtype("omdp_engine_nbbo_t")
"""``omdp_engine_nbbo_t`` (engine_nbbo.h): a series' NBBO after a quote that changed it."""

GROUP_INFO_DTYPE = c_dtype("omdp_engine_group_info_t")

SERIES_REF_DTYPE = c_dtype("omdp_series_ref_t")
GROUP_REF_DTYPE = c_dtype("omdp_group_ref_t")
"""A group's model, with which the hot path prices a series first seen after a refresh."""

REF_DISABLED_LO = np.iinfo(np.int64).min
REF_DISABLED_HI = np.iinfo(np.int64).max
"""A limit at these values disables its check."""
