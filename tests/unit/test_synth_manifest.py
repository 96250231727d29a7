"""The manifest schema: a generated manifest validates; missing or wrong fields do not."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ops.synth.manifest import ManifestError, load_manifest

MINIMAL = {
    "schema_version": 1, "generator": "omdp synth", "date": "2008-02-04", "start_time": "09:30:00", "seconds": 1.0,
    "seed": 0, "timezone": "America/New_York", "session_open": "09:30:00", "session_close": "16:00:00",
    "exchanges": {"C": "CBOE"},
    "universe": {"source": "builtin", "underlyings": 1, "roots": 1, "series": 2},
    "rate": {"multiplier": 1.0, "target_packets_per_second": 24000.0, "target_messages_per_packet": 14.0,
             "session_seconds": 1.0, "packets": 1, "messages": 2, "packets_per_second": 1.0,
             "messages_per_second": 2.0, "messages_per_packet": 2.0},
    "lines": [{"line": 1, "first_root": "IBM", "last_root": "IBM", "roots": 1,
               "a": {"group": "233.43.202.1", "port": 11001, "source": "10.8.0.1", "source_port": 30000},
               "b": {"group": "233.43.203.1", "port": 12001, "source": "10.8.1.1", "source_port": 30000},
               "files": {"a": ["line01.pcap"]}, "packets": 1, "messages": 2, "payload_bytes": 60, "first_seq": 1, "last_seq": 2,
               "categories": {"k": 2}}],
    "roots": {"IBM": "IBM"},
    "underlyings": [{"id": 0, "symbol": "IBM", "kind": "equity", "spot": 106.0, "vol": 0.3, "exchanges": "ABCIPX",
                     "penny": False, "weight": 1.0, "series": 2}],
    "ground_truth": {"file": "ground_truth.parquet", "rows": 0, "events": 0, "kinds": {}},
    "nbbo_rule": "...",
}


def _write(tmp_path: Path, doc: dict) -> Path:
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    return tmp_path


def test_minimal_manifest_validates(tmp_path: Path) -> None:
    m = load_manifest(_write(tmp_path, MINIMAL))
    assert m.lines[0].a.port == 11001 and m.roots == {"IBM": "IBM"}


@pytest.mark.parametrize(("change", "field"), [
    (lambda d: d.pop("seed"), "seed: Field required"),
    (lambda d: d.update(schema_version=2), "schema_version: Input should be 1 (got 2)"),
    (lambda d: d["lines"][0].update(line=0), "lines[0].line: "),
    (lambda d: d["lines"][0]["files"].update(c=["x.pcap"]), "lines[0].files.c"),
    (lambda d: d["underlyings"][0].update(kind="future"), "underlyings[0].kind: "),
    (lambda d: d.update(surprise=1), "surprise: Extra inputs are not permitted"),
])
def test_wrong_manifests_are_rejected_naming_the_field(tmp_path: Path, change, field: str) -> None:
    doc = json.loads(json.dumps(MINIMAL))
    change(doc)
    with pytest.raises(ManifestError) as err:
        load_manifest(_write(tmp_path, doc))
    assert str(err.value).startswith(f"{tmp_path / 'manifest.json'}: {field}")
    assert "\n" not in str(err.value) and "pydantic" not in str(err.value)


def test_a_manifest_that_is_not_json_or_not_utf8_is_one_line(tmp_path: Path) -> None:
    for raw in (b'{"x":', b"\xfe\xff binary"):
        (tmp_path / "manifest.json").write_bytes(raw)
        with pytest.raises(ManifestError) as err:
            load_manifest(tmp_path)
        assert str(err.value).startswith(f"{tmp_path / 'manifest.json'}: Invalid JSON") and "\n" not in str(err.value)
