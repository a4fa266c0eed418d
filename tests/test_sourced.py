"""``Efficiency``, ``Stability`` and ``Usability`` name their sources with ``sourced``, made field by
field: every field of the figures is kept (a field added to one of them and not to ``sourced`` fails here)."""

from __future__ import annotations

import dataclasses

import pytest

from app.core.ranges import Range
from app.core.types import Efficiency, Stability, Usability


@pytest.mark.parametrize("kind", [Efficiency, Stability, Usability])
def test_sourced_keeps_every_figure_and_changes_only_the_sources(kind: type) -> None:
    values = {
        f.name: (f"words {i}" if f.type in ("str", str) else Range(i, i + 1, i + 2))
        for i, f in enumerate(dataclasses.fields(kind))
    }
    original = kind(**values)
    sources = ("a source",)
    assert kind.sourced(original, sources) == dataclasses.replace(original, sources=sources)
