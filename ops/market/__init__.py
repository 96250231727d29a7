"""Market-wide statistics without re-partitioning (docs/market_stats.md): the operators'
registration (``operators``), the C core driven without a partition (``core``), the
sequential oracle (``oracle``), the window sink (``sink``) and the benchmark (``bench``)."""
