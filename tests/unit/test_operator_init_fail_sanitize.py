"""Every C operator refuses parameters of the wrong size the same way (omdp_op_init_fail,
native/src/runtime/operator.c): OMDP_ERR_PARAMS, the reason in init->err cut to its room,
nothing written where there is no room. Named "sanitize": CI runs it under ASan/UBSan."""
from __future__ import annotations

import pytest

from omdp.native import ffi, lib

VTABLES = {
    "seq_source": (lib.omdp_seq_source_vtable, "params: expected omdp_seq_source_params_t"),
    "seq_sink": (lib.omdp_seq_sink_vtable, "params: expected omdp_seq_sink_params_t"),
    "feed_handler": (lib.omdp_feed_handler_vtable, "params: expected omdp_fh_params_t"),
    "decision_engine": (lib.omdp_engine_op_vtable, "params: expected omdp_engine_op_params_t"),
    "elastic_engine": (lib.omdp_elastic_op_vtable, "params: expected omdp_elastic_op_params_t"),
    "latency_collector": (lib.omdp_latency_collector_vtable, "params: expected omdp_latency_op_params_t"),
    "market_stats": (lib.omdp_market_stats_vtable, "params: expected omdp_market_stats_params_t"),
    "market_merge": (lib.omdp_market_merge_vtable, "params: expected omdp_market_merge_params_t"),
}


def _init(vtable, err_size: int) -> tuple[int, str]:
    params = ffi.new("uint8_t[]", 3)  # no operator's params are 3 bytes
    err = ffi.new("char[]", 256) if err_size else ffi.NULL
    name = ffi.new("char[]", b"op")
    init = ffi.new("omdp_op_init_t *", {"params": params, "params_size": 3, "replica": 0, "replicas": 1,
                                        "name": name, "err": err, "err_size": err_size})
    state = ffi.new("void **")
    rc = vtable.init(state, init)
    return rc, (ffi.string(err).decode() if err_size else "")


@pytest.mark.parametrize("kind", sorted(VTABLES))
def test_params_of_the_wrong_size_are_refused_with_the_reason(kind: str) -> None:
    get, reason = VTABLES[kind]
    rc, text = _init(get(), 256)
    assert rc == lib.OMDP_ERR_PARAMS and text == reason


def test_the_reason_is_cut_to_the_room_given_and_nothing_is_written_without_room() -> None:
    vt = lib.omdp_seq_source_vtable()
    rc, text = _init(vt, 8)
    assert rc == lib.OMDP_ERR_PARAMS and text == "params:"
    rc, text = _init(vt, 0)
    assert rc == lib.OMDP_ERR_PARAMS and text == ""


@pytest.mark.parametrize("kind", ["decision_engine", "elastic_engine"])
@pytest.mark.parametrize("out_bytes", [0, 12, 1 << 27])
def test_both_engine_operators_refuse_an_output_buffer_they_cannot_use(kind: str, out_bytes: int) -> None:
    """The engine and elastic operators check out_bytes in one place (omdp_engine_op_io_init)."""
    ctype = "omdp_engine_op_params_t *" if kind == "decision_engine" else "omdp_elastic_op_params_t *"
    prm = ffi.new(ctype)
    prm.out_bytes = out_bytes
    if kind == "elastic_engine":
        prm.shared = ffi.cast("void *", 1)  # never touched: out_bytes is refused first
    err = ffi.new("char[]", 256)
    init = ffi.new("omdp_op_init_t *", {"params": prm, "params_size": ffi.sizeof(ctype[:-2]), "replica": 0,
                                        "replicas": 1, "name": ffi.NULL, "err": err, "err_size": 256})
    assert VTABLES[kind][0]().init(ffi.new("void **"), init) == lib.OMDP_ERR_PARAMS
    assert ffi.string(err).decode().startswith("out_bytes must be a multiple of 8")
