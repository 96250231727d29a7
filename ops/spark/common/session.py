"""The one way the nightly jobs get a SparkSession: quiet logs, UTC, dynamic partition
overwrite (a rerun for a date replaces only that date's partitions).

Quiet logs: Spark's JVM logs at ``log_level`` (ERROR by default) from its first line, not
only once the session is up: the driver JVM a Python job starts reads ``log4j2.properties``
beside this module, whose root level is the ``omdp.spark.log.level`` system property. The
hostname, native-hadoop and "default log4j profile" WARNs of every start are gone; a job's
own errors still print. ``spark_conf`` (``omdp analytics --conf k=v``) is passed through to Spark
and wins over the defaults here.

In local mode the Python workers must run the driver's interpreter and see its source tree,
so both are passed down; on a cluster the executors' Python comes from the cluster's
configuration (``PYSPARK_PYTHON``, ``spark.archives``; see docs/analytics.md).
"""
from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pyspark is imported when a session starts: the CLI reads LOG_LEVELS without it
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
"""The master when none is given and the job was not launched by ``spark-submit``."""

_PROJECT_ROOT = Path(__file__).resolve().parents[3]

WORKER_DAEMON = "ops.spark.common.worker_daemon"
"""The Python worker daemon module of local masters (the executors import it from the
project on their path)."""

LOG_LEVELS = ("OFF", "FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE", "ALL")
"""The levels ``SparkContext.setLogLevel`` takes (``omdp analytics --spark-log-level``)."""

DEFAULT_LOG_LEVEL = "ERROR"
"""Spark's log level unless asked otherwise: its WARNs are about the host, not the night."""

LOG4J2_CONFIG = Path(__file__).resolve().with_name("log4j2.properties")
"""The driver JVM's logging configuration (root level from ``-Domdp.spark.log.level``)."""

BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
"""Set to 1 in the executors' Python workers: their numpy must not start BLAS threads."""


def launched_by_spark_submit() -> bool:
    """True when this Python driver was started by ``spark-submit`` (its JVM is already up
    and knows the master)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def is_local_master(master: str) -> bool:
    """``local``, ``local[N]``, ``local[*]`` or ``local[N,F]``."""
    return master == "local" or master.startswith("local[")


def local_cores(master: str) -> int:
    """Worker threads of a local master."""
    if master == "local":
        return 1
    inner = master[len("local[") : -1].split(",")[0]
    return (os.cpu_count() or 1) if inner == "*" else int(inner)


def build_session(app_name: str, master: str | None = None, *, ui: bool = False,
                  log_level: str = DEFAULT_LOG_LEVEL, spark_conf: Mapping[str, str] | None = None) -> SparkSession:
    """Start (or reuse) the SparkSession of a nightly job.

    ``master`` None keeps what ``spark-submit`` configured, else means ``local[*]``. ``ui``
    False leaves the web UI off (tests, cron jobs). ``log_level``: one of ``LOG_LEVELS``.
    ``spark_conf``: Spark settings that override these defaults.
    """
    from pyspark.sql import SparkSession

    log_level = log_level.upper()
    if log_level not in LOG_LEVELS:
        raise ValueError(f"Spark log level {log_level!r}: one of {', '.join(LOG_LEVELS)}")
    # PySpark 4 warns on every Arrow path that it has not been certified with pandas 3; the
    # jobs hand Arrow batches, not pandas frames, across.
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    if master is None and not launched_by_spark_submit():
        master = DEFAULT_MASTER
    builder = SparkSession.builder.appName(app_name)
    conf = {
        "spark.ui.enabled": "true" if ui else "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        "spark.sql.session.timeZone": "UTC",
        # The jobs' plans are wide (one column per hop and percentile); keep them whole in logs.
        "spark.sql.debug.maxToStringFields": "500",
        # Python workers start as `python -m pyspark.daemon`, which puts the working
        # directory first on the path: started from a source checkout they would import its
        # omdp, which has no compiled module. Python >= 3.11 leaves it off with this.
        "spark.executorEnv.PYTHONSAFEPATH": "1",
        # One task per core, each single-threaded by design: numpy's BLAS (OpenBLAS, or MKL /
        # an OpenMP runtime) would start a thread per core in every Python worker, and those
        # threads spin-wait, taking task CPU from the next task (seen in perf on the backtest).
        **{f"spark.executorEnv.{v}": "1" for v in BLAS_THREAD_VARS},
        # Read by the driver JVM this process starts (not by one spark-submit started).
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.as_uri()} "
                                         f"-Domdp.spark.log.level={log_level}",
    }
    if master is not None:
        builder = builder.master(master)
        if is_local_master(master):
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            path = os.environ.get("PYTHONPATH", "")
            conf["spark.executorEnv.PYTHONPATH"] = os.pathsep.join(
                p for p in (str(_PROJECT_ROOT), path) if p
            )
            # The nightly aggregates are small; Spark's 200 shuffle partitions would mostly
            # schedule empty tasks on one machine.
            conf["spark.sql.shuffle.partitions"] = str(4 * local_cores(master))
            # PySpark's daemon, started with PySpark's zips last on the path: each worker it
            # forks then imports the installed PySpark's cached bytecode instead of compiling
            # pyspark.worker and its imports from the zip (ops/spark/common/worker_daemon.py).
            conf["spark.python.daemon.module"] = WORKER_DAEMON
    java_options = conf["spark.driver.extraJavaOptions"]
    conf.update(spark_conf or {})
    if conf["spark.driver.extraJavaOptions"] != java_options:  # theirs, and still the quiet logs
        conf["spark.driver.extraJavaOptions"] += " " + java_options
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    return spark
