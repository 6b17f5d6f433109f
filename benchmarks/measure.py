"""One benchmark figure and the table they make."""
from __future__ import annotations

import json
from typing import NamedTuple


class Ratio(NamedTuple):
    """A measured quantity beside its reference, measured in the same run."""
    group: str               # replay, sweep, memory, nuts, population
    name: str                # what was measured
    value: float             # its measure (seconds, or MiB for memory)
    reference: str           # what it is compared with
    reference_value: float
    unit: str = "s"
    note: str = ""

    @property
    def ratio(self) -> float:
        return self.value / self.reference_value


def table(rows: list[Ratio]) -> str:
    """The figures as one aligned text table."""
    head = f"{'group':10s} {'measured':34s} {'value':>10s} {'reference':26s} {'value':>10s} {'ratio':>8s}  note"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r.group:10s} {r.name:34s} {r.value:9.3f}{r.unit[0]} {r.reference:26s} "
                     f"{r.reference_value:9.3f}{r.unit[0]} {r.ratio:7.2f}x  {r.note}")
    return "\n".join(lines)


def to_json(rows: list[Ratio], meta: dict) -> str:
    """The figures and what they were measured on, as JSON."""
    return json.dumps({"meta": meta, "rows": [{**r._asdict(), "ratio": r.ratio} for r in rows]}, indent=1)
