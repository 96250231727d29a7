"""cffi build of the omdp native module, ``omdp._native``.

Every C component contributes three things, and nothing here names a component:
``native/include/omdp/<name>.h`` (its ABI contract), optional sources
``native/src/<folder>/<name>*.c`` (its code, grouped by component: runtime/, captures/,
codec/, transport/, metrics/, replay/, reshard/, feed_handler/, engine/, elastic/; see
native/README.md) and ``native/cdef/<NN>_<name>.cdef`` (the functions Python may call, in
cffi's C subset). The types and constants Python shares with C are not repeated there: they
sit in ``/* cdef: begin */`` ... ``/* cdef: end */`` blocks of the headers, which
``header_cdef.py`` hands to cffi ahead of the cdef files.
Sources are collected from every folder under ``native/src``; a component's private
headers sit next to its sources and are included by plain name. Adding a component is
adding files.

Optional parts: a source whose name ends in ``_ib.c`` is compiled only where
``infiniband/verbs.h`` exists (docs/architecture.md principle 8), and its cdef must be named
``*_ib.cdef``. Likewise ``*_xdp.c`` / ``*_xdp.cdef`` (AF_XDP, docs/xdp.md) only where
libxdp's ``xdp/xsk.h`` and libbpf's ``bpf/bpf.h`` exist, and then every source sees
``OMDP_HAVE_XDP``. A source, header or cdef whose name ends in ``_mpi`` is never part of
``omdp._native``: it makes the module ``omdp._native_mpi`` (``make_mpi_ffibuilder``;
``build_native_mpi.py`` for setuptools), built only where an MPI is found (``mpi_flags``:
the ``mpicc`` beside this Python or on PATH, asked for its flags; Open MPI's ``-showme``,
MPICH's ``-compile_info``) and linked with it, so only a process that uses the ``mpi``
transport loads the MPI libraries (docs/mpi.md). It shares ``omdp._native``'s types
(cffi's ``include``), so their pointers pass between the two modules; its sources may use
only the headers' inline functions, not ``omdp._native``'s symbols.

Environment knobs (documented in the README):
  OMDP_SANITIZE=1   build with -fsanitize=address,undefined (CI runs the codec tests so)
  OMDP_MARCH=...    value for -march (default ``native``; ``none`` omits the flag)
  OMDP_MPI=0        build without the MPI part even where an MPI is found
"""
from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

from cffi import FFI

NATIVE = Path(__file__).resolve().parent
INCLUDE = NATIVE / "include"
SRC = NATIVE / "src"


def _header_cdef(headers: list[Path]) -> str:
    """header_cdef.py's declarations of the headers' marked blocks (loaded by path: setuptools
    runs this file without native/ on the import path)."""
    spec = importlib.util.spec_from_file_location("omdp_header_cdef", NATIVE / "header_cdef.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.header_cdef(headers)


def _have_verbs() -> bool:
    return any(Path(p, "infiniband", "verbs.h").exists() for p in ("/usr/include", "/usr/local/include"))


@cache
def mpi_flags() -> tuple[list[str], list[str]] | None:
    """(compile flags, link flags) of the MPI found here, or None: no MPI, or OMDP_MPI=0."""
    if os.environ.get("OMDP_MPI") == "0":
        return None
    beside = Path(sys.executable).parent / "mpicc"
    mpicc = str(beside) if beside.exists() else shutil.which("mpicc")
    if not mpicc:
        return None
    for compile_q, link_q in (("-showme:compile", "-showme:link"), ("-compile_info", "-link_info")):
        try:
            cflags = subprocess.run([mpicc, compile_q], capture_output=True, text=True, timeout=30)
            lflags = subprocess.run([mpicc, link_q], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if cflags.returncode == 0 and lflags.returncode == 0:
            # MPICH prints the whole command line, compiler first
            c, ln = shlex.split(cflags.stdout), shlex.split(lflags.stdout)
            if c and not c[0].startswith("-"):
                c = c[1:]
            if ln and not ln[0].startswith("-"):
                ln = ln[1:]
            c = [f for f in c if f.startswith(("-I", "-D", "-pthread"))]
            ln = [f for f in ln if f.startswith(("-L", "-l", "-Wl,", "-pthread"))]
            return c, ln
    return None


def _have_xdp() -> bool:
    return all(any(Path(p, h).exists() for p in ("/usr/include", "/usr/local/include"))
               for h in ("xdp/xsk.h", "bpf/bpf.h"))


def _is_mpi(path: Path) -> bool:
    return path.stem.endswith("_mpi")


def _wanted(path: Path, suffix: str) -> bool:
    if _is_mpi(path):
        return False  # omdp._native_mpi's
    if path.stem.endswith("_xdp"):
        return _have_xdp()
    return not path.stem.endswith("_ib") or _have_verbs()


def _sources() -> list[Path]:
    """Every C source under native/src, in a stable order, less the optional ones not wanted here."""
    return sorted(p for p in SRC.rglob("*.c") if _wanted(p, ".c"))


def _compile_args() -> list[str]:
    # -fno-semantic-interposition with -Bsymbolic (below): a call from one omdp function to
    # another binds inside the module (inlined in one file, a direct call across files),
    # not through the PLT; nothing interposes omdp's symbols
    args = ["-std=gnu11", "-O3", "-Wall", "-Wextra", "-Wno-unused-parameter", "-fno-strict-aliasing",
            "-fno-semantic-interposition"]
    march = os.environ.get("OMDP_MARCH", "native")
    if _have_xdp():
        args.append("-DOMDP_HAVE_XDP")
    if march != "none":
        args.append(f"-march={march}")
    if os.environ.get("OMDP_SANITIZE") == "1":
        args += ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=undefined", "-O1", "-g"]
    return args


def _link_args() -> list[str]:
    args = ["-lrt", "-lpthread", "-Wl,-Bsymbolic"]
    if os.environ.get("OMDP_SANITIZE") == "1":
        args += ["-fsanitize=address,undefined"]
    if _have_verbs() and any(p.stem.endswith("_ib") for p in _sources()):
        args += ["-libverbs"]
    if _have_xdp():
        args += ["-lxdp", "-lbpf"]
    return args


def make_ffibuilder() -> FFI:
    """Collect every component's cdef, header and sources into one cffi builder."""
    ffibuilder = FFI()
    headers = sorted((INCLUDE / "omdp").glob("*.h"))
    headers = [h for h in headers if _wanted(h, ".h")]
    cdefs = sorted(p for p in (NATIVE / "cdef").glob("*.cdef") if _wanted(p, ".cdef"))
    ffibuilder.cdef(_header_cdef(headers) + "\n".join(p.read_text() for p in cdefs))
    includes = "\n".join(f'#include "omdp/{h.name}"' for h in headers)
    sources = [str(p.relative_to(NATIVE.parent)) for p in _sources()]
    ffibuilder.set_source(
        "omdp._native",
        includes,
        sources=sources,
        include_dirs=[str(INCLUDE)],
        extra_compile_args=_compile_args(),
        extra_link_args=_link_args(),
    )
    return ffibuilder


def make_mpi_ffibuilder(native: FFI) -> FFI | None:
    """``omdp._native_mpi``: the ``*_mpi`` headers, cdefs and sources, on ``native``'s types
    and linked with the MPI found here; None where there is none (or OMDP_MPI=0)."""
    flags = mpi_flags()
    if flags is None:
        return None
    ffibuilder = FFI()
    ffibuilder.include(native)
    mine = sorted(h for h in (INCLUDE / "omdp").glob("*.h") if _is_mpi(h))
    cdefs = sorted(p for p in (NATIVE / "cdef").glob("*.cdef") if _is_mpi(p))
    ffibuilder.cdef(_header_cdef(mine) + "\n".join(p.read_text() for p in cdefs))
    # the included types need their C declarations too: every header the main module has
    headers = [h for h in sorted((INCLUDE / "omdp").glob("*.h")) if _wanted(h, ".h")] + mine
    ffibuilder.set_source(
        "omdp._native_mpi",
        "\n".join(f'#include "omdp/{h.name}"' for h in headers),
        sources=[str(p.relative_to(NATIVE.parent)) for p in sorted(SRC.rglob("*.c")) if _is_mpi(p)],
        include_dirs=[str(INCLUDE)],
        extra_compile_args=_compile_args() + flags[0],
        extra_link_args=_link_args() + flags[1],
    )
    return ffibuilder


ffibuilder = make_ffibuilder()

if __name__ == "__main__":
    # Development build in place: python native/build_native.py (both modules)
    os.chdir(NATIVE.parent)
    ffibuilder.compile(verbose=False)
    mpi_builder = make_mpi_ffibuilder(ffibuilder)
    if mpi_builder is not None:
        mpi_builder.compile(verbose=False)
