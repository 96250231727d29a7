"""Spark as ``omdp analytics`` starts it: no WARN flood on start (ERROR by default), a
``--conf k=v`` setting reaches the session, and the task bar counts a job's tasks."""
from __future__ import annotations

import io
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.full  # Spark sessions

PROBE = """
from ops.spark.common.session import build_session
s = build_session("omdp-probe", "local[1]", log_level=sys.argv[1], spark_conf={"spark.omdp.probe": "given"})
print(s.conf.get("spark.omdp.probe"), s.sparkContext._jvm.org.apache.logging.log4j.LogManager.getRootLogger().getLevel())
s.stop()
"""


def start(level: str) -> subprocess.CompletedProcess:
    if shutil.which("java") is None:
        pytest.skip("no Java runtime: Spark 4 needs Java 17 or later")
    return subprocess.run([sys.executable, "-P", "-c", "import sys\n" + PROBE, level], capture_output=True, text=True,
                          timeout=300)


def test_a_default_start_says_no_warnings_and_passes_settings_through() -> None:
    res = start("ERROR")
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["given", "ERROR"]
    assert " WARN " not in res.stderr and "Setting default log level" not in res.stderr, res.stderr


def test_warn_level_is_what_it_says() -> None:
    res = start("warn")
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["given", "WARN"]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_task_bar_counts_every_task_of_a_job() -> None:
    from ops.progress import SparkTasksBar
    from spark_test_session import local_spark

    with local_spark("omdp-bar") as spark:
        out = Terminal()
        with SparkTasksBar(spark.sparkContext.statusTracker(), quiet=False, file=out) as bar:
            assert spark.range(0, 10_000, numPartitions=4).selectExpr("sum(id)").collect()[0][0] == 49_995_000
            bar.tick()
            assert bar.bar.total >= 4 and bar.bar.n == bar.bar.total
