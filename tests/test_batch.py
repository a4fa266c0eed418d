"""Batch evaluation: vectorised, and exactly what one profile at a time gives."""

from __future__ import annotations

import datetime as dt
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from seed_snapshot import knowledge_from_seeds

from app.core.types import Profile
from app.domain.decisions import schemas as s
from app.domain.decisions.scored import results as scored_results
from app.domain.shared.schemas import DimensionScores
from app.engine import batch, decision, scoring
from app.host.manager import create_option_host

AS_OF = dt.date(2026, 1, 1)
profiles = st.builds(
    Profile,
    gpus=st.integers(1, 5000),
    utilization=st.floats(0.001, 1.0),
    horizon_years=st.floats(0.01, 10),
    as_of=st.just(AS_OF),
    team_size=st.integers(1, 500),
    ops_team=st.sampled_from(["none", "basic", "professional"]),
    data_security=st.sampled_from(["standard", "high", "extreme"]),
    start_within_days=st.integers(0, 400),
    rental_plan=st.sampled_from(["on_demand", "reserved_1y"]),
    capex_budget=st.none() | st.floats(0, 1e9),
)
HOST = create_option_host()
KB = knowledge_from_seeds()


def _view(ranking):
    return [(e.option, e.rank, e.score, dict(e.scores), e.fit, e.feasible) for e in ranking]


@settings(max_examples=40, deadline=None)
@given(st.lists(profiles, min_size=1, max_size=30))
def test_vectorised_batch_equals_one_profile_at_a_time(batch_profiles):
    _ranks_as_one_at_a_time(batch_profiles)


def _ranks_as_one_at_a_time(batch_profiles):
    """The batch of ``batch_profiles`` (default weights) ranks every profile as it ranks it alone."""
    weights = decision.default_weights(KB)
    results = batch.evaluate(batch_profiles, [weights] * len(batch_profiles), KB, list(HOST.options), HOST.choose)
    for profile, result in zip(batch_profiles, results, strict=True):
        outcomes = decision.assess_all(HOST.options, lambda o, p=profile: HOST.assess(o, p, KB))
        single = decision.decide(profile, outcomes, KB, weights)
        assert result.recommended_option == single.recommended_option
        assert _view(result.ranking) == _view(single.ranking)


#: profiles where some options have no offer (a GPU model or plan they lack) or break a constraint
awkward = st.builds(
    Profile,
    gpus=st.integers(1, 2000),
    utilization=st.floats(0.01, 1.0),
    horizon_years=st.floats(0.1, 10),
    as_of=st.just(AS_OF),
    team_size=st.integers(1, 200),
    ops_team=st.sampled_from(["none", "basic", "professional"]),
    data_security=st.sampled_from(["standard", "extreme"]),
    start_within_days=st.none() | st.integers(0, 400),
    rental_plan=st.sampled_from([None, "on_demand", "spot", "reserved_3y"]),
    gpu_model=st.sampled_from([None, "h100_sxm", "ascend_910b", "h20", "l40s"]),
    capex_budget=st.none() | st.floats(0, 1e8),
)
#: default weights, and weights on one dimension only (where options tie more often)
weightings = st.sampled_from(
    [
        None,
        *(
            {d: float(d == one) for d in ("cost", "efficiency", "stability", "usability")}
            for one in ("stability", "usability")
        ),
    ]
)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(awkward, weightings), min_size=1, max_size=20))
def test_options_without_offers_or_feasibility_rank_as_for_one_profile(cases):
    ps = [p for p, _ in cases]
    ws = [decision.default_weights(KB) if w is None else w for _, w in cases]
    results = batch.evaluate(ps, ws, KB, list(HOST.options), HOST.choose)
    assert len(results) == len(ps)
    for profile, w, result in zip(ps, ws, results, strict=True):
        outcomes = decision.assess_all(HOST.options, lambda o, p=profile: HOST.assess(o, p, KB))
        single = decision.decide(profile, outcomes, KB, w)
        assert result.recommended_option == single.recommended_option
        assert _view(result.ranking) == _view(single.ranking)
        assert [e.error_code for e in result.ranking] == [r.outcome.error_code for r in single.ranking]


def test_the_answer_made_from_the_columns_is_the_one_made_from_each_result():
    ps = [
        Profile(gpus=g, utilization=u, horizon_years=2, as_of=AS_OF, gpu_model=m, rental_plan=plan)
        for g, u, m, plan in [
            (64, 0.5, None, None),
            (8, 0.9, "h20", None),
            (512, 0.2, None, "spot"),
            (16, 0.6, "l40s", None),
            (100, 0.7, "ascend_910b", "reserved_3y"),
        ]
    ]
    found = batch.evaluate(ps, [decision.default_weights(KB)] * len(ps), KB, list(HOST.options), HOST.choose)
    expected = [
        s.ScoredResult(
            recommended_option=r.recommended_option,
            ranking=[
                s.ScoredEntry(
                    option=e.option,
                    rank=e.rank,
                    score=e.score,
                    scores=DimensionScores(**e.scores),
                    fit=e.fit,
                    feasible=e.feasible,
                    annual_cost=e.annual_cost,
                    total_cost=e.total_cost,
                    cost_per_useful_gpu_hour=e.cost_per_useful_gpu_hour,
                    error=e.error,
                    cost_per_effective_gpu_hour=e.cost_per_effective_gpu_hour,
                    error_code=e.error_code,
                )
                for e in r.ranking
            ],
        )
        for r in found
    ]
    assert scored_results(found) == expected
    assert {e.error_code for r in expected for e in r.ranking} == {None, "no-offer"}
    assert found[-1] == found[len(ps) - 1] and found[1:3] == [found[1], found[2]]
    with pytest.raises(IndexError):
        found[len(ps)]


#: totals, spreads and feasibility drawn from a few values, so that profiles tie on them often
few = st.sampled_from([0.0, -0.0, 1.0, 2.5, 100.0, -7.0, float("inf"), float("-inf")])


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 5).flatmap(
        lambda k: st.lists(
            st.lists(
                st.tuples(st.booleans(), few | st.just(float("nan")), few | st.just(float("nan"))),
                min_size=k,
                max_size=k,
            ),
            min_size=1,
            max_size=12,
        )
    )
)
def test_ranking_many_profiles_at_once_orders_as_ranked_does(profiles):
    k = len(profiles[0])
    options = [f"option-{j}" for j in range(k)]
    feasible = np.array([[p[j][0] for p in profiles] for j in range(k)])
    raw = np.array([[p[j][1] for p in profiles] for j in range(k)])
    spreads = np.array([[p[j][2] for p in profiles] for j in range(k)])
    order = scoring.ranked_many(options, feasible, raw, spreads)
    for i, p in enumerate(profiles):
        rows = [(options[j], p[j][0], p[j][1], p[j][2]) for j in range(k)]
        assert order[:, i].tolist() == scoring.ranked(rows)


def _bits(x: float) -> bytes:
    return struct.pack("<d", x)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.floats(allow_nan=True, allow_infinity=True)
        | st.integers(-(10**9), 10**9).map(lambda i: i / 2000)
        | st.integers(-(10**6), 10**6).map(lambda i: i / 20 + 0.005),
        min_size=2,
        max_size=40,
    ),
    st.sampled_from([1, 2, 4]),
)
def test_rounding_at_once_is_pythons_round_bit_for_bit(values, digits):
    given = np.array(values)
    assert [_bits(x) for x in batch.rounded(given, digits).tolist()] == [_bits(round(x, digits)) for x in values]
    strided = np.stack([given, given])[:, ::2]  # not contiguous, two dimensions
    assert [_bits(x) for x in batch.rounded(strided, digits)[1].tolist()] == [
        _bits(round(x, digits)) for x in values[::2]
    ]


def test_a_plugin_that_cannot_take_arrays_is_called_per_profile():
    def scalar_only(option, profile, knowledge, ends):
        if not isinstance(profile.gpus, int):
            raise TypeError("arrays not supported")
        return HOST.choose(option, profile, knowledge, ends)

    ps = [Profile(gpus=g, utilization=0.5, horizon_years=1, as_of=AS_OF) for g in (8, 64, 512)]
    w = decision.default_weights(KB)
    slow = batch.evaluate(ps, [w] * 3, KB, list(HOST.options), scalar_only)
    fast = batch.evaluate(ps, [w] * 3, KB, list(HOST.options), HOST.choose)
    assert [_view(r.ranking) for r in slow] == [_view(r.ranking) for r in fast]


def test_the_endpoint_takes_10000_profiles(client):
    body = {
        "profiles": [
            {
                "gpus": 8 * (1 + i % 64),
                "utilization": round(0.05 + (i % 19) * 0.05, 2),
                "horizon_years": 1 + i % 5,
                "team_size": 3 + i % 60,
                "ops_team": ["none", "basic", "professional"][i % 3],
            }
            for i in range(10_000)
        ]
    }
    r = client.post("/v1/evaluations", json=body)
    assert r.status_code == 200, r.text[:300]
    doc = r.json()
    assert doc["detail"] == "scores" and len(doc["results"]) == 10_000 and doc["evaluations"] is None
    single = client.post("/v1/recommendations", json={**body["profiles"][123], "as_of": None}).json()
    assert doc["results"][123]["recommended_option"] == single["recommended_option"]
    assert [e["score"] for e in doc["results"][123]["ranking"]] == [e["score"] for e in single["ranking"]]


def test_full_detail_adds_each_whole_evaluation(client):
    body = {"profiles": [{"gpus": 16, "utilization": 0.6, "horizon_years": 2, "team_size": 20}], "detail": "full"}
    doc = client.post("/v1/evaluations", json=body).json()
    assert len(doc["evaluations"]) == 1
    assert doc["evaluations"][0]["recommended_option"] == doc["results"][0]["recommended_option"]
    assert doc["evaluations"][0]["ranking"][0]["reasons"]


def test_small_batches_one_at_a_time_equal_the_vectorised_path(client):
    from app.domain.decisions.service import SMALL_BATCH

    profiles = [
        {
            "gpus": 8 * (1 + i),
            "utilization": 0.1 + 0.1 * i,
            "horizon_years": 1 + i % 3,
            "team_size": 4 + i,
            "ops_team": ["none", "basic", "professional"][i % 3],
        }
        for i in range(SMALL_BATCH + 1)
    ]
    small = client.post("/v1/evaluations", json={"profiles": profiles[:SMALL_BATCH]}).json()["results"]
    large = client.post("/v1/evaluations", json={"profiles": profiles}).json()["results"]
    assert small == large[:SMALL_BATCH]


def test_every_profile_field_is_grouped_or_an_array():
    """A field neither shared by a group nor an array over it would take its first member's value for
    the whole group (``buyer_country`` once did: a batch mixing buyers answered the first one's)."""
    import dataclasses

    from app.core.types import PROFILE_NUMBERS

    fields = {f.name for f in dataclasses.fields(Profile)}
    assert set(batch.CATEGORICAL) | set(PROFILE_NUMBERS) == fields
    assert not set(batch.CATEGORICAL) & set(PROFILE_NUMBERS)


#: profiles with the fields a buyer of named GPUs sends: where the cluster is bought, the largest job,
#: the preemptible share, a delay cost
buyers = st.builds(
    lambda gpus, job_share, **rest: Profile(gpus=gpus, largest_job_gpus=max(1, round(gpus * job_share)), **rest),
    gpus=st.integers(1, 3000),
    job_share=st.sampled_from([0.01, 0.125, 1.0]),
    utilization=st.floats(0.05, 1.0),
    horizon_years=st.sampled_from([1.0, 3.0, 5.0]),
    as_of=st.just(dt.date(2026, 12, 1)),
    team_size=st.integers(1, 200),
    ops_team=st.sampled_from(["none", "professional"]),
    gpu_model=st.sampled_from(["h100_sxm", "a100_80gb", "h800_sxm"]),
    buyer_country=st.sampled_from([None, "US", "CN", "DE"]),
    preemptible_share=st.sampled_from([0.0, 1.0]),
    delay_cost_per_day=st.none() | st.sampled_from([0.0, 5e4]),
    currency=st.sampled_from(["CNY", "USD"]),
)


@settings(max_examples=25, deadline=None)
@given(st.lists(buyers, min_size=2, max_size=16))
def test_a_batch_of_buyers_ranks_each_as_one_profile(batch_profiles):
    _ranks_as_one_at_a_time(batch_profiles)
