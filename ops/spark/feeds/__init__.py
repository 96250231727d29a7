"""The feeds job: captures decoded into the tick table, and the day's rate profile,
messages per packet, category mix and busiest underlyings."""
