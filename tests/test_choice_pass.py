"""The choice among an option's offers in one pass over their columns (``Kernel.expected_choice``): the
rented and platform options' costs per effective GPU-hour at the expected end, made over every
shortlisted offer at once, are their quotes' figures bit for bit, and they refuse the same offers — so a
kernel that has the pass chooses, lists and answers what quoting every offer chose (``Kernel.assess`` and
``Kernel.choose``); and a chosen quote materialised (``OptionHost.materialise``) is the assessment's answer."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import pytest
from seed_snapshot import knowledge_from_seeds

from app.core.columns import EXPECTED
from app.core.errors import NoOffer
from app.core.kernel import Kernel
from app.core.ranges import holds_anywhere
from app.core.types import Profile
from app.core.vocab import CURRENCIES, DATA_SECURITY_LEVELS, OPS_TEAMS
from app.engine.decision import broken as decision_broken
from app.host.manager import create_option_host

#: the options whose kernels choose in one pass
OPTIONS = ("rented_gpu_instances", "ai_compute_platform")
AS_OF = (dt.date(2026, 12, 1), dt.date(2026, 6, 15), dt.date(2025, 12, 31))
PLANS = (None, None, None, "on_demand", "spot", "reserved_1y", "reserved_3y", "monthly", "capacity_block")


def _profiles(n: int) -> list[Profile]:
    kb = knowledge_from_seeds()
    rng = random.Random(20261207)
    models = [None, *sorted({p.gpu_model for p in kb.prices if p.gpu_model != "*"})]
    regions = sorted(kb.regions)
    found = []
    for _ in range(n):
        gpus = rng.choice([1, 3, 8, 16, 64, 100, 256, 1000, 4096, rng.randint(1, 5000)])
        found.append(
            Profile(
                gpus=gpus,
                utilization=rng.choice([0.001, 0.05, 0.3, 0.6, 0.85, 1.0, round(rng.uniform(0.01, 1), 3)]),
                horizon_years=rng.choice([0.25, 0.5, 1, 2.0, 3.0, 5.0, round(rng.uniform(0.1, 10), 2)]),
                as_of=rng.choice(AS_OF),
                team_size=rng.choice([1, 5, 10, 50, 200]),
                ops_team=rng.choice(OPS_TEAMS),
                data_security=rng.choice([*DATA_SECURITY_LEVELS, *["standard"] * 4]),
                start_within_days=rng.choice([None, None, None, 0, 14, 30, 90, 365]),
                rental_plan=rng.choice(PLANS),
                currency=rng.choice(CURRENCIES),
                gpu_model=rng.choice(models),
                delay_cost_per_day=rng.choice([None, None, 0.0, 5e4]),
                regions=tuple(rng.sample(regions, 4)) if rng.random() < 0.1 else None,
                largest_job_gpus=rng.choice([None, None, max(1, gpus // 2), 16]),
                preemptible_share=rng.choice([0.0, 0.0, 1.0]),
                held_share=rng.choice([None, None, 0.2, 0.9]),
                buyer_country=rng.choice([None, None, "US", "CN", "DE"]),
            )
        )
    return found


def _kernel(host: Any, kb: Any, p: Profile, option: str) -> Kernel:
    kernel: Kernel = host.kernel(option, kb, p.currency, p.as_of)
    return kernel


@pytest.mark.parametrize("option", OPTIONS)
def test_the_one_pass_gives_the_quotes_figures_bit_for_bit(option: str) -> None:
    kb = knowledge_from_seeds()
    host = create_option_host()
    compared = refused = 0
    for p in _profiles(800):
        kernel = _kernel(host, kb, p, option)
        at = kernel.columns(p, EXPECTED)
        try:
            shortlist = kernel.shortlist(at)
        except NoOffer:
            continue
        found = kernel.expected_choice(at, shortlist)
        assert found is not None
        keys, infeasible = found
        quotes = kernel.quotes(at.at_ends(EXPECTED), shortlist)
        # the same floats, not close ones: a tie between offers is broken on the same figures
        assert keys == [q.effective.expected for q in quotes], p
        assert infeasible == [holds_anywhere(q.broken()) for q in quotes], p
        assert all(type(k) is float for k in keys)
        compared += len(keys)
        refused += sum(infeasible)
    assert compared > 500 and 0 < refused < compared, (compared, refused)


@pytest.mark.parametrize("option", OPTIONS)
def test_an_assessment_and_a_choice_are_those_of_quoting_every_offer(
    option: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = knowledge_from_seeds()
    host = create_option_host()
    cases = [p for p in _profiles(300) if p.gpu_model is not None]
    kernel = type(_kernel(host, kb, cases[0], option))
    one_pass = kernel.expected_choice
    passes = []

    def counted(self: Kernel, at: Any, candidates: Any) -> Any:
        passes.append(len(candidates))
        return one_pass(self, at, candidates)

    monkeypatch.setattr(kernel, "expected_choice", counted)
    with_pass = [_answers(host, kb, p, option) for p in cases]
    assert len(passes) > 30 and max(passes) > 7, passes  # the pass chose, among many offers
    # the same kernels without the pass: every shortlisted offer quoted, as before it
    monkeypatch.setattr(kernel, "expected_choice", Kernel.expected_choice)
    assert [_answers(host, kb, p, option) for p in cases] == with_pass
    assert sum(a != "no offer" for a in with_pass) > 30


def _answers(host: Any, kb: Any, p: Profile, option: str) -> Any:
    kernel = _kernel(host, kb, p, option)
    try:
        a = kernel.assess(p)
    except NoOffer:
        return "no offer"
    chosen = [kernel.choose(p, ends) for ends in ((0, 1, 2), EXPECTED)]
    # repr: every float to its last bit (NaN at an end a choice did not quote equals itself)
    return repr(
        (
            a.cost,
            a.offer_label,
            a.offers_considered,
            [(x.offer, x.feasible, x.reasons, x.cost) for x in a.alternatives],
            [(q.candidate.offer_label if q.candidate else None, q.total, q.effective, n) for q, n in chosen],
        )
    )


def test_a_chosen_quote_materialised_is_the_assessments_answer() -> None:
    """A training plan takes each option's chosen quote and materialises it for its offer and reasons
    (``OptionHost.materialise``) rather than assessing the profile again: the offer, figures and
    sentences are the assessment's, for every option (the own cluster's too)."""
    kb = knowledge_from_seeds()
    host = create_option_host()
    compared = infeasible = 0
    for p in _profiles(200):
        for option in host.options:
            try:
                assessed = host.assess(option, p, kb)
            except NoOffer:
                continue
            quote, _ = host.choose(option, p, kb)
            made = host.materialise(option, p, kb, quote)
            assert made.offer == assessed.offer, (option, p)
            assert repr(made.cost) == repr(assessed.cost), (option, p)
            assert [str(v.reason) for v in made.violations] == [str(v.reason) for v in assessed.violations]
            assert [v.violated for v in made.violations] == [v.violated for v in assessed.violations]
            compared += 1
            infeasible += bool(decision_broken(assessed))
    assert compared > 200 and 0 < infeasible < compared, (compared, infeasible)
