"""``manifest.json`` of a synthetic capture: what is in ``captures/<date>/`` and how it was
made. The schema is these pydantic models (documented in docs/manifest.md); readers
validate a manifest with ``load_manifest``.
"""
from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from omdp.atomic_files import write_text_atomic
from omdp.errors import InputError

MANIFEST_FILE = "manifest.json"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Endpoint(_Strict):
    """Where one copy of a line is sent: multicast group and UDP port, and the source."""

    group: str
    port: int = Field(ge=1, le=65535)
    source: str
    source_port: int = Field(ge=1, le=65535)


FEED_FORMATS = ("opra-fast-v2", "obi-v6")
"""What the pcaps carry: OPRA FAST V2 packets (the 2008 market) or OBI v6 blocks (today's)."""


class LineInfo(_Strict):
    """One OPRA line: its alphabetical root range, addresses, files and counts. FAST
    captures number lines 1..99; OBI lines are 1..96 and 220 (spec 2.2, 2.3)."""

    line: int = Field(ge=1, le=225)
    first_root: str
    last_root: str
    roots: int = Field(ge=0)
    a: Endpoint
    b: Endpoint
    files: dict[Literal["a", "b"], list[str]]
    packets: int = Field(ge=0)
    messages: int = Field(ge=0)
    payload_bytes: int = Field(ge=0)
    first_seq: int = Field(ge=0)
    last_seq: int = Field(ge=0)
    categories: dict[str, int]


class UnderlyingInfo(_Strict):
    """One underlying: its id (the ``underlying_id`` routing assigns), symbol and model."""

    id: int = Field(ge=0)
    symbol: str
    kind: Literal["equity", "etf", "index", "currency"]
    spot: float = Field(gt=0)
    vol: float = Field(gt=0)
    exchanges: str
    penny: bool
    weight: float = Field(ge=0)
    series: int = Field(ge=0)


class RateInfo(_Strict):
    """The rate asked for and the rate the capture has (over its session seconds)."""

    multiplier: float = Field(gt=0)
    target_packets_per_second: float = Field(gt=0)
    target_messages_per_packet: float = Field(gt=0)
    session_seconds: float = Field(ge=0)
    packets: int = Field(ge=0)
    messages: int = Field(ge=0)
    packets_per_second: float = Field(ge=0)
    messages_per_second: float = Field(ge=0)
    messages_per_packet: float = Field(ge=0)


class UniverseInfo(_Strict):
    """Where the names came from and how many there are."""

    source: str
    underlyings: int = Field(ge=0)
    roots: int = Field(ge=0)
    series: int = Field(ge=0)


class GroundTruthInfo(_Strict):
    """The ground-truth file of injected anomalies (Parquet, schema in docs/manifest.md),
    and (today's market) the file of injected transport faults: gaps and bad checksums."""

    file: str
    rows: int = Field(ge=0)
    events: int = Field(ge=0)
    kinds: dict[str, int]
    faults_file: str | None = None
    faults: dict[str, int] = Field(default_factory=dict)


class ProfileInfo(_Strict):
    """Today's burst profile (docs/synth.md "Today's market"): what ``--rate`` scaled."""

    peak_ratio: float = Field(ge=1)
    peak_msgs_per_second_1x: float = Field(gt=0)
    mean_msgs_per_second_1x: float = Field(gt=0)
    target_msgs_per_second: float = Field(gt=0)
    bucket_ns: int = Field(gt=0)


class FileCheck(_Strict):
    """Size and CRC-32 of one file of the capture (``ops.capture.checksums``)."""

    bytes: int = Field(ge=0)
    crc32: int = Field(ge=0, lt=1 << 32)


class Manifest(_Strict):
    """Everything a reader of the capture needs besides the pcaps."""

    schema_version: Literal[1] = 1
    feed_format: Literal["opra-fast-v2", "obi-v6"] = "opra-fast-v2"
    generator: str
    date: dt.date
    start_time: str
    seconds: float = Field(gt=0)
    seed: int
    timezone: str
    session_open: str
    session_close: str
    exchanges: dict[str, str]
    universe: UniverseInfo
    rate: RateInfo
    lines: list[LineInfo]
    roots: dict[str, str] = Field(description="option root -> underlying symbol")
    underlyings: list[UnderlyingInfo]
    ground_truth: GroundTruthInfo
    nbbo_rule: str
    checksums: dict[str, FileCheck] = Field(default_factory=dict,
                                            description="file name -> size and CRC-32; readers check them")
    profile: ProfileInfo | None = None

    @model_validator(mode="after")
    def _lines_of_format(self) -> "Manifest":
        allowed = (lambda n: 1 <= n <= 96 or n == 220) if self.feed_format == "obi-v6" else (lambda n: 1 <= n <= 99)
        bad = [ln.line for ln in self.lines if not allowed(ln.line)]
        if bad:
            raise ValueError(f"lines: {bad[0]} is not a line of feed_format {self.feed_format}")
        return self


def write_manifest(manifest: Manifest, directory: Path) -> Path:
    """Write ``manifest.json`` into ``directory``."""
    return write_text_atomic(Path(directory) / MANIFEST_FILE, manifest.model_dump_json(indent=1))


class ManifestError(InputError):
    """A manifest that does not match its schema: the file, the first field and why."""


def load_manifest(path: str | Path) -> Manifest:
    """Read and validate a manifest (``path`` is the file or its directory); a bad one
    raises ManifestError naming the field (``lines[0].a.port``), not pydantic's dump."""
    from omdp.topology.load import problems_of

    path = Path(path)
    if path.is_dir():
        path = path / MANIFEST_FILE
    try:
        return Manifest.model_validate_json(path.read_bytes())
    except ValidationError as e:
        problems = problems_of(e)
        field, why = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ManifestError(f"{path}: {f'{field}: ' if field else ''}{why}{more}") from None
