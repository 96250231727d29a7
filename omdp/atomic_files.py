"""Writing a file so that a reader finds the old file or the whole new one, never half of it.

Every artifact omdp leaves on disk (a run's plan.json, run.json, Parquet records, a replay's
status.json, a night's report tables, a capture's manifest) is written under a temporary
name in its own directory and renamed into place. When the write fails - the disk is full,
the directory went away - the temporary is removed and the error says which file could not
be written and why (``ArtifactWriteError``), so a full disk leaves neither a 0-byte file nor
a ``.tmp`` behind, and the command reports one line instead of a traceback.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


class ArtifactWriteError(OSError):
    """A file could not be written: which one and the system's reason (``errno`` kept)."""

    def __init__(self, path: Path, cause: OSError) -> None:
        reason = os.strerror(cause.errno) if cause.errno else (cause.strerror or str(cause))
        super().__init__(cause.errno, f"cannot write {path}: {reason}")
        self.path = path

    def __str__(self) -> str:
        return str(self.strerror)


def temporary_name(path: Path) -> Path:
    """The hidden temporary ``path`` is written under before it is renamed into place."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; when the block ends normally, rename it to
    ``path``; when it raises, remove it (an OSError becomes ``ArtifactWriteError`` naming
    ``path``)."""
    path = Path(path)
    tmp = temporary_name(path)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            tmp.unlink()
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError) and not isinstance(exc, ArtifactWriteError):
            raise ArtifactWriteError(path, exc) from exc
        raise


def write_bytes_atomic(path: str | Path, data: bytes) -> Path:
    """Write ``data`` as ``path`` (temporary, then renamed)."""
    path = Path(path)
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return path


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) as ``path`` (temporary, then renamed)."""
    return write_bytes_atomic(path, text.encode())


def write_parquet_atomic(table: Any, path: str | Path, **options: Any) -> Path:
    """Write the pyarrow ``table`` as Parquet file ``path`` (temporary, then renamed);
    ``options`` go to ``pyarrow.parquet.write_table``."""
    import pyarrow.parquet as pq

    path = Path(path)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, **options)
    return path
