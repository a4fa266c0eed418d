"""An assessment's notes and an evaluation's reasons are composed where an answer reads them
(``app.core.text.Composed``): an evaluation's entries show them; a price comparison and a batch's scores do not,
and never format their figures."""

from __future__ import annotations

from typing import Any

import pytest
from litestar.testing import TestClient

from app.core.text import Composed, msg
from app.openapi.generators import PROFILE_EXAMPLE


def test_composed_reads_as_the_tuple_it_composes_once() -> None:
    calls: list[int] = []

    def compose() -> tuple[str, ...]:
        calls.append(1)
        return (msg("note.x", "first"), "second")

    notes = Composed(compose)
    assert not calls  # nothing composed until read
    assert notes == ("first", "second") and tuple(notes) == ("first", "second") and len(notes) == 2
    assert notes[1] == "second" and notes[:1] == ("first",) and [*notes] == ["first", "second"]
    assert hash(notes) == hash(("first", "second")) and notes == Composed(lambda: ("first", "second"))
    assert notes != ("first",) and notes != ["first", "second"]
    assert calls == [1]


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many notes were composed (``Composed.sentences`` composing, not reading what it composed)."""
    composed: list[int] = []
    sentences = Composed.sentences

    def counting(self: Composed) -> tuple[str, ...]:
        if self._compose is not None:
            composed.append(1)
        return sentences(self)

    monkeypatch.setattr(Composed, "sentences", counting)
    return composed


def test_a_price_comparison_composes_no_notes_and_an_evaluation_shows_them(
    client: TestClient[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    composed = _counted(monkeypatch)
    body = {"gpus": 24, "utilization": 0.55, "horizon_years": 2}  # bodies no other test sends: no memo answers
    r = client.post("/v1/price-comparisons", json=body)
    assert r.status_code == 200, r.text
    assert composed == []
    profile = {**PROFILE_EXAMPLE, **body}
    r = client.post("/v1/evaluations", json={"profiles": [profile]})  # scores: no sentences
    assert r.status_code == 200, r.text
    scored = r.json()["results"][0]
    assert composed == [] and len(scored["ranking"]) == 3
    r = client.post("/v1/evaluations", json={"profiles": [profile], "detail": "full"})
    assert r.status_code == 200, r.text
    assert composed  # the options' reasons, their notes among them
    full = r.json()
    ranking = full["evaluations"][0]["ranking"]
    assert full["evaluations"][0]["recommended_option"] == scored["recommended_option"]
    for entry, shown in zip(scored["ranking"], ranking, strict=True):  # the figures the evaluation shows
        assert {k: entry[k] for k in ("option", "rank", "score", "scores", "fit", "feasible")} == {
            k: shown[k] for k in ("option", "rank", "score", "scores", "fit", "feasible")
        }
        cost = shown["cost"]
        assert entry["annual_cost"] == cost["annual_cost"]["expected"]
        assert entry["total_cost"] == cost["total_cost"]["expected"]
        assert entry["cost_per_useful_gpu_hour"] == cost["cost_per_useful_gpu_hour"]["expected"]
        assert entry["cost_per_effective_gpu_hour"] == cost["cost_per_effective_gpu_hour"]["expected"]
    reasons = {o["option"]: o["reasons"] for o in full["evaluations"][0]["ranking"]}
    own = reasons["self_built_cluster"]
    assert any(x.startswith("Own cluster (") and "server(s) cost" in x for x in own), own
    assert any(x.startswith("Rented (") for x in reasons["rented_gpu_instances"])
    assert any(x.startswith("Platform (") for x in reasons["ai_compute_platform"])
