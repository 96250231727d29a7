"""The elastic engine operator's control thread publishes the level, the rate, the peak rate
per level and the decision counts to the run's stats segment (what the dashboard and /metrics
read), and the dashboard treats level-like counters as gauges."""
from __future__ import annotations

import os
import time

from decision_engines.elastic import ElasticConfig, ElasticControl, ElasticEngine
from decision_engines.elastic_operator import ElasticControlThread
from omdp.metrics.stats_segment import StatsReader, StatsWriter
from omdp.runtime.elastic_control import ElasticController
from ops.bench.elastic import market_stream
from ops.dashboard.source import is_gauge


def test_control_thread_publishes_level_rates_and_decisions() -> None:
    run_id = f"elastictest{os.getpid()}"
    writer = StatsWriter.create(run_id)
    el = ElasticEngine(ElasticConfig(workers=2, buckets=8, level=1))
    warm, req = market_stream(20, 20_000)
    ctl = ElasticControl(el, ElasticController(max_level=2))
    thread = ElasticControlThread("de", el, ctl, 0.05, writer)
    try:
        thread.start()
        el.process(warm)
        el.process(req)
        # The thread publishes every 0.05 s; on a loaded host a period can come late, so wait
        # (bounded) for the publication that has seen every message and three decisions.
        deadline = time.monotonic() + 10.0
        while True:
            ops = {o["name"]: o for o in StatsReader(run_id).operators()}
            main, peaks, decisions = ops["de"]["counters"], ops["de.peaks"]["counters"], ops["de.decisions"]["counters"]
            done = main["processed"] == len(warm) + len(req) and sum(decisions.values()) >= 3
            if done or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert main["processed"] == len(warm) + len(req) and main["level"] in (1, 2)
        assert peaks["peak_l1"] > 0 and set(peaks) == {"peak_l1", "peak_l2"}
        assert sum(decisions.values()) >= 3 and "up" in decisions and "down_idle" in decisions
        assert thread.history()["periods"] and thread.history()["counters"]["processed"] == main["processed"]
    finally:
        thread.stop()
        el.close()
        writer.close()
    assert is_gauge("level") and is_gauge("peak_l3") and is_gauge("rate_per_s") and not is_gauge("moves")
