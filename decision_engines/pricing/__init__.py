"""Pricing off the hot path: Black-76 values, implied volatility, implied forwards, smiles,
and the price bands and parity limits the C engine checks quotes against."""
