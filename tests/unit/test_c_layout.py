"""Every record C shares with Python, pinned in one place (in the manner of Databento DBN's
layout tests): its size and alignment, every field's offset, no implicit padding, and the
numpy dtype Python reads it with.

A record is a struct of the headers' cdef blocks that holds only numbers, bytes and other
records (no pointer): what crosses a process, a file or shared memory. The headers are the
one source of its layout (the build hands their cdef blocks to cffi, omdp.c_layout builds the
dtypes from the compiled module); this test pins what readers elsewhere rely on, so a layout
change is a deliberate edit of SIZES. Run under ASan/UBSan in CI (the name matches ``layout``).
"""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from omdp.c_layout import c_dtype
from omdp.native import ffi, lib
from omdp.native_mpi import built, mpi_native

_SPEC = importlib.util.spec_from_file_location("header_cdef", Path(__file__).resolve().parents[2] / "native" / "header_cdef.py")
header_cdef = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(header_cdef)
HeaderError, block_cdef, marked_blocks = header_cdef.HeaderError, header_cdef.block_cdef, header_cdef.marked_blocks
include_order, integer_constants = header_cdef.include_order, header_cdef.integer_constants

SIZES: dict[str, tuple[int, int]] = {
    "chan_stats": (56, 8), "elastic_config": (40, 4), "elastic_counters": (88, 8), "elastic_worker_stats": (48, 8),
    "engine_config": (16, 4), "engine_counters": (200, 8), "engine_group_info": (8, 4), "engine_nbbo": (80, 8),
    "engine_series_info": (64, 8), "fh_arb": (72, 8), "fh_obi_arb": (472, 8), "fh_obi_ctl_key": (16, 4), "fh_obi_gap": (32, 8), "fh_line_params": (140, 4), "fh_offline_counts": (104, 8),
    "fh_offline_pkt": (24, 8), "fh_route": (16, 4), "fh_stage_extra": (32, 8), "fh_stage_series": (24, 8),
    "fh_staged": (64, 8), "frame_header": (8, 4), "group_ref": (104, 8), "hist": (30784, 8), "id_field": (4, 2),
    "latency_config": (56, 8), "latency_counters": (136, 8), "line_counts": (40, 8), "market_bench_result": (48, 8),
    "market_emit": (32, 8), "market_merge_params": (24, 4), "market_rec": (128, 8), "market_stats_params": (32, 4), "mpi_stats": (64, 8),
    "obi_batch_result": (32, 8), "obi_block": (32, 4), "obi_counters": (200, 8), "obi_error": (24, 8), "obi_extra": (12, 4),
    "obi_stream_result": (16, 8), "op_stats": (32, 8),
    "opra_arrow_result": (40, 8), "opra_batch_result": (32, 8), "opra_counters": (248, 8), "opra_error": (24, 8),
    "opra_msg": (256, 8), "opra_stream_result": (16, 8), "opra_y_entry": (32, 4), "partition_stats": (80, 8),
    "record_header": (56, 8), "replay_control": (128, 8), "replay_frame": (24, 8), "replay_intended_entry": (16, 8),
    "replay_intended_header": (128, 8), "replay_line_stats": (128, 8), "replay_log": (384, 8), "replay_pkt": (48, 8),
    "replay_sender_status": (9984, 8), "replay_sent": (40, 8), "reshard_handover": (16, 8),
    "reshard_marker": (96, 8), "reshard_move": (80, 8), "reshard_series": (584, 8), "reshard_totals": (64, 8),
    "sample_id_layout": (24, 2), "sample_id": (32, 8), "seq_record": (80, 8), "seq_sink_params": (8, 4),
    "seq_source_params": (32, 8), "series_ref": (32, 8), "signal": (152, 8), "stamp_clock_info": (96, 8),
    "stamps": (48, 8), "stats_info": (144, 8), "stats_line": (64, 8), "stats_operator": (352, 8),
    "stats_run_info": (4520, 8), "stats_signal": (80, 8), "tcp_stats": (56, 8), "tsc_clock": (48, 8),
    "vega_layout": (72, 8), "vega_stats": (144, 8), "vib_remote": (48, 8), "vib_stats": (64, 8),
    "vtcp_record_header": (16, 8), "vtcp_stats": (56, 8),
}
"""omdp_<name>_t -> (size, alignment) in bytes."""

IB_RECORDS = ("vib_",)
"""Records of the InfiniBand path, built only where infiniband/verbs.h exists."""
MPI_RECORDS = ("mpi_",)
"""Records of the mpi transport, in omdp._native_mpi, built only where an MPI was found (native/build_native.py)."""


def _structs(of: Any) -> dict[str, object]:
    out = {}
    for name in of.list_types()[0]:
        tp = of.typeof(name)
        if tp.kind != "struct":
            continue
        try:
            of.sizeof(tp)                                   # completes it before its fields are read
        except of.error:
            continue                                        # an opaque handle
        out[name] = tp
    return out


def _is_record(tp: Any) -> bool:
    return not any(f.type.kind in ("pointer", "function") for _, f in tp.fields)


STRUCTS = _structs(ffi)
NATIVE_RECORDS = sorted(n for n, tp in STRUCTS.items() if _is_record(tp))
"""omdp._native's records (their numpy dtypes are read from it: omdp.c_layout)."""
if built():  # omdp._native_mpi's own records, on omdp._native's types
    STRUCTS = {**_structs(mpi_native()[0]), **STRUCTS}
RECORDS = sorted(n for n, tp in STRUCTS.items() if _is_record(tp))


def test_every_record_is_pinned() -> None:
    has_ib, has_mpi = hasattr(lib, "omdp_vib_open"), built()
    assert RECORDS == sorted(f"omdp_{n}_t" for n in SIZES
                             if (has_ib or not n.startswith(IB_RECORDS)) and (has_mpi or not n.startswith(MPI_RECORDS)))


@pytest.mark.parametrize("record", RECORDS)
def test_size_alignment_offsets_and_no_implicit_padding(record: str) -> None:
    tp = STRUCTS[record]
    assert (ffi.sizeof(tp), ffi.alignof(tp)) == SIZES[record[5:-2]]
    at = 0
    for name, field in tp.fields:
        assert field.offset == at, f"{record}.{name}: {field.offset - at} bytes of implicit padding before it"
        assert field.offset % ffi.alignof(field.type) == 0, f"{record}.{name} misaligned"
        at += ffi.sizeof(field.type)
    assert at == ffi.sizeof(tp), f"{record}: {ffi.sizeof(tp) - at} bytes of implicit padding at the end"


@pytest.mark.parametrize("record", NATIVE_RECORDS)
def test_the_numpy_dtype_is_the_c_layout(record: str) -> None:
    tp, dtype = STRUCTS[record], c_dtype(record)
    assert dtype.itemsize == ffi.sizeof(tp) and dtype.alignment == ffi.alignof(tp)
    assert list(dtype.names) == [name for name, _ in tp.fields]
    for name, field in tp.fields:
        assert dtype.fields[name][1] == field.offset, name
        assert dtype.fields[name][0].itemsize == ffi.sizeof(field.type), name
    raw = np.arange(dtype.itemsize, dtype=np.uint8)          # numpy and cffi read the same bytes
    view, c = raw.view(dtype)[0], ffi.from_buffer(f"{record} *", raw)
    for name, field in tp.fields:
        if field.type.kind == "primitive" and field.type.cname not in ("float", "double", "char"):
            assert int(view[name]) == getattr(c, name), name


# ---- the extractor of the headers' cdef blocks (native/header_cdef.py) ----

def test_blocks_become_cffi_declarations() -> None:
    headers = {
        "a": '/* x */\n/* cdef: begin */\n#define A_N 3u /* count */\n#define A_BIG (A_N << 4)\n'
             'typedef struct a { _Atomic uint64_t seq; char name[A_BIG + 1]; } a_t;\n/* cdef: end */\n#define HIDDEN 1\n',
        "b": '#include "omdp/a.h"\n/* cdef: begin */\ntypedef struct b { a_t a[A_N]; } b_t;\n/* cdef: end */\n',
    }
    values = integer_constants(headers)
    assert values["A_BIG"] == 48 and values["HIDDEN"] == 1
    assert include_order({"b": headers["b"], "a": headers["a"]}) == ["a", "b"]
    out = block_cdef(marked_blocks(headers["a"], "a.h")[0], values, "a.h")
    assert out.splitlines() == ["#define A_N ...", "#define A_BIG ...",
                                "typedef struct a { uint64_t seq; char name[49]; } a_t;"]
    assert "HIDDEN" not in out
    assert block_cdef(marked_blocks(headers["b"], "b.h")[0], values, "b.h").strip() == \
        "typedef struct b { a_t a[3]; } b_t;"


@pytest.mark.parametrize("text, message", [
    ("/* cdef: begin */\nint x;\n", "not closed"),
    ("/* cdef: end */\n", "not opened"),
    ("/* cdef: begin */\n/* cdef: begin */\n/* cdef: end */\n", "inside another"),
])
def test_unbalanced_blocks_are_refused(text: str, message: str) -> None:
    with pytest.raises(HeaderError, match=f"h.h:.*{message}"):
        marked_blocks(text, "h.h")


@pytest.mark.parametrize("block, message", [
    ("#define F(x) (x)", "only constants"),
    ("#include <stdint.h>", "only constants"),
    ("static inline int f(void) { return 0; }", "no inline functions"),
    ("typedef struct s { char c[UNKNOWN]; } s_t;", "'UNKNOWN' is not an integer constant"),
])
def test_what_cffi_cannot_take_is_refused_by_header(block: str, message: str) -> None:
    with pytest.raises(HeaderError, match=f"h.h: .*{message}"):
        block_cdef(block, {}, "h.h")


def test_an_include_cycle_is_refused() -> None:
    with pytest.raises(HeaderError, match="include cycle: a -> b -> a"):
        include_order({"a": '#include "omdp/b.h"\n', "b": '#include "omdp/a.h"\n'})
