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
        # for the publication that has seen every message and three decisions (the deadline
        # only stops a hang).
        deadline = time.monotonic() + 60.0
        while True:
            ops = {o["name"]: o for o in StatsReader(run_id).operators()}
            main, decisions = ops["de"]["counters"], ops["de.decisions"]["counters"]
            if main["processed"] == len(warm) + len(req) and sum(decisions.values()) >= 3:
                break
            assert time.monotonic() < deadline, (main, decisions)
            time.sleep(0.05)
        thread.stop()  # its last period ends with a publication: the segment holds what it decided
        ops = {o["name"]: o for o in StatsReader(run_id).operators()}
        main, peaks, decisions = ops["de"]["counters"], ops["de.peaks"]["counters"], ops["de.decisions"]["counters"]
        counters = el.counters()
        assert main["processed"] == counters["processed"] == len(warm) + len(req)
        assert main["level"] == counters["level"] in (1, 2) and main["moves"] == counters["moves"]
        assert main["level_changes"] == counters["level_changes"]
        assert peaks == {f"peak_l{i + 1}": int(p or 0) for i, p in enumerate(ctl.controller.peak)}
        assert peaks["peak_l1"] > 0, "level 1 ran, so it has a peak rate"
        # which decisions a period takes depends on the rates this host measured; that each is
        # published as the controller counted it does not
        assert decisions == ctl.decisions and sum(decisions.values()) >= 3
        assert thread.history()["periods"] and thread.history()["counters"]["processed"] == main["processed"]
    finally:
        thread.stop()
        el.close()
        writer.close()
    assert is_gauge("level") and is_gauge("peak_l3") and is_gauge("rate_per_s") and not is_gauge("moves")
