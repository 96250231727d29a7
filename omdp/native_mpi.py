"""The ``mpi`` transport's compiled module, ``omdp._native_mpi``: ``ffi`` and ``lib`` of the
C part that links the MPI library (docs/mpi.md "Installing").

It is a module of its own, built only where an MPI was found, so that ``omdp._native``
(every omdp process) never loads Open MPI or UCX; it is imported here on first use, never
at import. Its types are ``omdp._native``'s (cffi's ``include``): a pointer from one passes
to the other.
"""
from __future__ import annotations

import importlib.util
from functools import cache
from typing import Any

MODULE = "omdp._native_mpi"


def built() -> bool:
    """True when this omdp has the module (without loading it, nor MPI)."""
    return importlib.util.find_spec(MODULE) is not None


@cache
def mpi_native() -> tuple[Any, Any]:
    """``(ffi, lib)`` of ``omdp._native_mpi``, loaded now (ImportError where it is not built)."""
    from omdp._native_mpi import ffi, lib

    return ffi, lib
