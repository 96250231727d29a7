"""The compiled C core of omdp: ``ffi`` and ``lib`` of the cffi module ``omdp._native``.

Every room reaches C through here; the headers under ``native/include/omdp`` are the
contract, this module is only the door.
"""
from __future__ import annotations

from omdp._native import ffi, lib

__all__ = ["ffi", "lib"]
