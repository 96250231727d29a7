"""What operators run: synthetic captures, replay, pipeline assembly, dashboard, Spark jobs,
benchmarks, topologies and the ``omdp`` command line (the composition root)."""
