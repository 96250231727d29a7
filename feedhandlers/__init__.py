"""OPRA feed handling: the OPRA FAST V2 codec binding, the OPRA message record, captures,
the feed handler operator and routing by underlying."""
