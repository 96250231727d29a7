"""Decision engines: quote books, NBBO, pricing (implied forward, volatility, smile),
checks and signals, and the Python API for custom engines."""
