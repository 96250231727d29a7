"""The backtest: captures run through the decision engines offline, per configuration,
scored against synthetic ground truth and reconciled with the live runs of the capture."""
