"""Build hook: setuptools compiles omdp._native through cffi (native/build_native.py), and
omdp._native_mpi (native/build_native_mpi.py) where an MPI is found (docs/mpi.md)."""
import importlib.util
from pathlib import Path

from setuptools import setup

_spec = importlib.util.spec_from_file_location("omdp_build_native", Path(__file__).resolve().parent / "native" / "build_native.py")
_native = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_native)

modules = ["native/build_native.py:ffibuilder"]
if _native.mpi_flags() is not None:
    modules.append("native/build_native_mpi.py:ffibuilder")
setup(cffi_modules=modules)
