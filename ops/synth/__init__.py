"""Synthetic OPRA captures of a February-2008-like day (``omdp synth``): a market model of
underlyings, exchange quotes and the NBBO, written through the C encoder as one pcap per
OPRA line, with a manifest and the ground truth of injected anomalies (docs/synth.md)."""
