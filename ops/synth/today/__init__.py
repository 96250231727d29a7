"""``omdp synth --market today``: today's OPRA (the binary OBI v6 feed on 96 lines, 17
participant exchanges, about a million series) synthesized; docs/synth.md "Today's market"."""
