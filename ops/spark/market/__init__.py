"""The market windows offline (docs/market_stats.md "Offline"): ``market_job``."""
