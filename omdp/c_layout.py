"""numpy dtypes of the C structs Python shares, built from the compiled module's own layout.

A struct crossing C and Python is written once, in its header (native/include/omdp/*.h,
inside a ``cdef`` block that the build hands to cffi); its numpy dtype is read back here
from ``ffi`` (every field's name, offset and type, and the struct's size), so the dtype
cannot disagree with C. Types map as numpy reads them: a ``char`` array is bytes (``S<n>``),
another array a subarray, a struct a nested dtype, an integer or float its own width.
"""
from __future__ import annotations

from functools import cache

import numpy as np

from omdp.native import ffi


def _field_format(tp: object) -> np.dtype | tuple[np.dtype, tuple[int, ...]]:
    """numpy's format for one cffi field type."""
    kind = tp.kind
    if kind == "struct":
        return c_dtype(tp.cname)
    if kind == "array":
        item = tp.item
        if item.kind == "primitive" and item.cname == "char":
            return np.dtype(f"S{tp.length}")
        inner = _field_format(item)
        if isinstance(inner, tuple):                       # an array of arrays
            return inner[0], (tp.length, *inner[1])
        return inner, (tp.length,)
    if kind == "primitive":
        size = ffi.sizeof(tp)
        if tp.cname in ("float", "double"):
            return np.dtype(f"<f{size}")
        if tp.cname == "char":
            return np.dtype("S1")
        if tp.cname == "_Bool":
            return np.dtype("?")
        signed = int(ffi.cast(tp, -1)) < 0
        return np.dtype(f"{'<' if size > 1 else ''}{'i' if signed else 'u'}{size}")
    raise TypeError(f"{tp.cname}: a {kind} has no numpy twin (a shared record holds numbers, bytes and structs)")


@cache
def c_dtype(ctype: str) -> np.dtype:
    """The numpy dtype of the C struct ``ctype`` (``"omdp_opra_msg_t"``): every field at
    its C offset, the C size and alignment."""
    tp = ffi.typeof(ctype)
    if tp.kind != "struct":
        raise TypeError(f"{ctype} is not a struct")
    size = ffi.sizeof(tp)                                  # completes the type before its fields are read
    names, formats, offsets = [], [], []
    for name, field in tp.fields:
        names.append(name)
        fmt = _field_format(field.type)
        formats.append(np.dtype(fmt) if isinstance(fmt, tuple) else fmt)
        offsets.append(field.offset)
    return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": size},
                    align=True)
