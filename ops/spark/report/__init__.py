"""The nightly job and its page: feeds, latency and backtest run together, their tables
and figures on one HTML report."""
