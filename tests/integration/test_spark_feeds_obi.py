"""The feeds job's tick decode on an OBI v6 file: the file is reported skipped with the
reason (the tick table's decoder reads FAST V2 only), not counted as bad packets."""
from __future__ import annotations

from pathlib import Path

import pytest
from pipeline_support import make_obi_capture

from ops.spark.feeds.capture_decode import FileOutcome, decode_capture
from ops.spark.common.data_layout import CaptureFile

pytestmark = pytest.mark.full


def test_an_obi_file_is_skipped_with_the_reason(tmp_path: Path) -> None:
    capture = make_obi_capture(tmp_path, seconds=0.3, lines=1, faults_per_second=0.0)
    f = capture / "line01.pcap"
    cf = CaptureFile(str(f), 1, "a", 0, f.stat().st_size)
    outcome = FileOutcome(cf.path, cf.line, cf.copy, cf.part, cf.size)
    assert list(decode_capture(cf, {}, outcome)) == []
    assert outcome.status == "skipped" and "OBI v6" in outcome.error
    assert outcome.packets == outcome.bad_packets == 0
