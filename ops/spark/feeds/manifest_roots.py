"""The root -> underlying map of a day's captures: the ``roots`` field of
``captures/<date>/manifest.json`` (written by ``omdp synth``; docs/manifest.md).

Only that field is read, so a manifest from a newer generator (or one written by hand for
a recorded capture) still gives its underlyings; ``ops.synth.manifest`` validates the rest.
"""
from __future__ import annotations

import json
from pathlib import Path

from omdp.errors import InputError


class ManifestError(InputError):
    """A manifest that is missing, not JSON, or without a root -> underlying map."""


def load_root_map(path: Path) -> dict[str, str]:
    """``{root: underlying symbol}`` from the manifest at ``path``."""
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise ManifestError("no manifest") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ManifestError(f"unreadable manifest: {exc}") from exc
    roots = doc.get("roots") if isinstance(doc, dict) else None
    if not isinstance(roots, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in roots.items()):
        raise ManifestError("manifest has no 'roots' map of root -> underlying symbol")
    return dict(roots)
