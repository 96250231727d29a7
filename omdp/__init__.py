"""omdp: the generic runtime (clock, records, operators, transports, metrics).

It knows nothing of OPRA: operators are found through a registry that ``ops`` fills.
"""

__version__ = "0.1.0"
