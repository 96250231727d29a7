"""The knob defaults live in omdp/transport/spec.py; vega_defaults.h repeats them for C.
This pins the two together (and the wait/on_full codes to the spec's spellings)."""
from __future__ import annotations

import typing

from omdp.native import lib
from omdp.transport import spec
from omdp.transport.vega import ON_FULL_CODES, WAIT_CODES


def test_c_defaults_match_python() -> None:
    assert lib.OMDP_VEGA_DEFAULT_QUEUE_SIZE == spec.DEFAULT_QUEUE_SIZE
    assert lib.OMDP_VEGA_DEFAULT_MAX_MESSAGE == spec.DEFAULT_MAX_MESSAGE
    assert bool(lib.OMDP_VEGA_DEFAULT_MUTEX) == spec.DEFAULT_MUTEX
    assert lib.OMDP_VEGA_DEFAULT_WAIT == WAIT_CODES[spec.DEFAULT_WAIT]
    assert lib.OMDP_VEGA_DEFAULT_ON_FULL == ON_FULL_CODES[spec.DEFAULT_ON_FULL]
    assert lib.OMDP_VEGA_DEFAULT_SIGNAL_EVERY == spec.DEFAULT_SIGNAL_EVERY


def test_c_limits_match_the_spec_fields() -> None:
    fields = spec.ChannelSpec.model_fields

    def bounds(name: str) -> tuple[int, int]:
        meta = fields[name].metadata
        return next(m.ge for m in meta if hasattr(m, "ge")), next(m.le for m in meta if hasattr(m, "le"))

    assert bounds("queue_size") == (lib.OMDP_VEGA_MIN_QUEUE_SIZE, lib.OMDP_VEGA_MAX_QUEUE_SIZE)
    assert bounds("max_message") == (lib.OMDP_VEGA_MIN_MESSAGE, lib.OMDP_VEGA_MAX_MESSAGE_LIMIT)


def test_every_spelling_has_a_c_code() -> None:
    assert set(WAIT_CODES) == set(typing.get_args(spec.WaitStrategy))
    assert set(ON_FULL_CODES) == set(typing.get_args(spec.FullPolicy))
    assert sorted(WAIT_CODES.values()) == [lib.OMDP_VEGA_WAIT_SPIN, lib.OMDP_VEGA_WAIT_SPIN_YIELD,
                                           lib.OMDP_VEGA_WAIT_SPIN_BLOCK]
