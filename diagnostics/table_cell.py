"""Text from a world or a store as one cell of a markdown table.

A world's names (profiles, personas) and a row's labels are text someone else wrote. In a table cell, a
'|' would open a column of its own and a line break a row of its own; worlds and rows holding control
characters are refused when read (``tdmodels.world``, ``online.store``), and `cell` is the second guard
for what reaches a table by another way.
"""
from __future__ import annotations

import re

_BREAKS = re.compile(r"[\r\n\u2028\u2029]")


def cell(text) -> str:
    """`text` as a markdown table cell: '|' escaped, line breaks shown as their escapes."""
    out = str(text).replace("\\", "\\\\").replace("|", "\\|")
    return _BREAKS.sub(lambda m: repr(m.group())[1:-1], out)


__all__ = ["cell"]
