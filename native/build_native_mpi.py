"""cffi build of ``omdp._native_mpi``, the ``mpi`` transport's module, for setuptools
(setup.py lists it only where an MPI is found): ``build_native.make_mpi_ffibuilder`` on
``omdp._native``'s builder (loaded by path: setuptools runs this file without native/ on
the import path)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("omdp_build_native", Path(__file__).resolve().parent / "build_native.py")
_native = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_native)

ffibuilder = _native.make_mpi_ffibuilder(_native.ffibuilder)
