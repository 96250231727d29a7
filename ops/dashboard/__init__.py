"""The live latency dashboard: a FastAPI app over a run's figures.

It reads a running run's shared-memory stats segment (``LiveSource``) or a finished run's
directory (``FinishedRunSource``), never the data path, and serves them as a versioned JSON
API (``/api/v1/...``), Prometheus ``/metrics``, a server-sent event stream and one page
(``/``). ``ops.dashboard.serve.start_dashboard`` runs it in a background thread of the
process that starts a run (``omdp run``/``omdp demo --dashboard HOST:PORT``);
``omdp dashboard`` serves a run from another terminal.
"""
