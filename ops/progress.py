"""Progress bars with clean numbers: tqdm shows a bar's count as it sums it, so a bar
counting seconds in float steps shows ``0.33499999999999996/2.0``; these formats round."""
from __future__ import annotations

SECONDS_BAR_FORMAT = "{desc}{percentage:3.0f}%|{bar}| {n:.1f}/{total:.1f} s [{elapsed}<{remaining}{postfix}]"
"""tqdm ``bar_format`` of a bar counting seconds (``0.3/2.0 s``)."""
