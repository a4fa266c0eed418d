"""An assessment's notes are composed where an answer reads them (``app.core.text.Said``): an evaluation's
reasons show them, a price comparison does not and never formats their figures."""

from __future__ import annotations

from typing import Any

import pytest
from litestar.testing import TestClient

from app.core.text import Said, msg
from app.openapi.generators import PROFILE_EXAMPLE


def test_said_reads_as_the_tuple_it_composes_once() -> None:
    calls: list[int] = []

    def compose() -> tuple[str, ...]:
        calls.append(1)
        return (msg("note.x", "first"), "second")

    said = Said(compose)
    assert not calls  # nothing composed until read
    assert said == ("first", "second") and tuple(said) == ("first", "second") and len(said) == 2
    assert said[1] == "second" and said[:1] == ("first",) and [*said] == ["first", "second"]
    assert hash(said) == hash(("first", "second")) and said == Said(lambda: ("first", "second"))
    assert said != ("first",) and said != ["first", "second"]
    assert calls == [1]


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many notes were composed (``Said.said`` composing, not reading what it composed)."""
    composed: list[int] = []
    said = Said.said

    def counting(self: Said) -> tuple[str, ...]:
        if self._compose is not None:
            composed.append(1)
        return said(self)

    monkeypatch.setattr(Said, "said", counting)
    return composed


def test_a_price_comparison_composes_no_notes_and_an_evaluation_shows_them(
    client: TestClient[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    composed = _counted(monkeypatch)
    body = {"gpus": 24, "utilization": 0.55, "horizon_years": 2}  # bodies no other test sends: no memo answers
    r = client.post("/v1/price-comparisons", json=body)
    assert r.status_code == 200, r.text
    assert composed == []
    r = client.post("/v1/evaluations", json={"profiles": [{**PROFILE_EXAMPLE, **body}], "detail": "full"})
    assert r.status_code == 200, r.text
    assert composed  # the options' notes, in their reasons
    reasons = {o["option"]: o["reasons"] for o in r.json()["evaluations"][0]["ranking"]}
    own = reasons["self_built_cluster"]
    assert any(x.startswith("Own cluster (") and "server(s) cost" in x for x in own), own
    assert any(x.startswith("Rented (") for x in reasons["rented_gpu_instances"])
    assert any(x.startswith("Platform (") for x in reasons["ai_compute_platform"])
