"""Many profiles at once (``POST /v1/evaluations``): the same model and scores, vectorised.

Profiles that share their categorical fields (ops team, data security, rental plan, currency,
GPU model, date, weights) form a group; within a group every numeric field becomes a NumPy array
and each option's kernel runs once for the whole group — its arithmetic is element-wise
(``app.sdk.columns``). A plugin that cannot take arrays is called once per profile
instead, so a third-party option still works, only slower. Scores, fit points, feasibility and
ranking come from ``app.engine.scoring``, as for one profile; the sentences (reasons) are left out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, NamedTuple

import numpy as np

from app.engine import rules as rule_engine
from app.engine import scoring
from app.sdk.errors import ISOLATED, MissingKnowledge, failure
from app.sdk.kernel import Quote
from app.sdk.knowledge import Knowledge
from app.sdk.types import PROFILE_NUMBERS, Profile
from app.sdk.vocab import DIMENSIONS

CATEGORICAL = ("ops_team", "data_security", "rental_plan", "currency", "gpu_model", "as_of", "providers", "regions")
#: choose(option, profile, knowledge) -> (the option's chosen quote, offers quoted): ``OptionHost.choose``
Choose = Callable[[str, Profile, Knowledge], tuple[Quote, int]]


class Entry(NamedTuple):
    """One option's place in one profile's ranking (a NamedTuple: a batch makes one per option and
    profile, and a frozen dataclass costs several times as much to build)."""

    option: str
    rank: int
    score: float
    scores: Mapping[str, float]
    fit: float
    feasible: bool
    annual_cost: float | None
    total_cost: float | None
    cost_per_useful_gpu_hour: float | None
    cost_per_effective_gpu_hour: float | None
    error: str | None
    error_code: str | None = None


#: an Entry from a tuple of its fields in order (NamedTuple's ``_make``: no argument parsing per entry)
make_entry = Entry._make


@dataclass(frozen=True, slots=True)
class Result:
    recommended_option: str | None
    ranking: tuple[Entry, ...]


@dataclass
class _Figures:
    """One option's figures over a group, as arrays (or the error that stopped it)."""

    #: cost per effective GPU-hour (what the cost score compares)
    per_hour: np.ndarray | None = None
    annual: np.ndarray | None = None
    total: np.ndarray | None = None
    measures: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    fit: np.ndarray | None = None
    feasible: np.ndarray | None = None
    error: str | None = None
    #: cost per useful GPU-hour
    useful: np.ndarray | None = None
    error_code: str | None = None


def evaluate(
    profiles: Sequence[Profile],
    weights: Sequence[Mapping[str, float]],
    knowledge: Knowledge,
    options: Sequence[str],
    choose: Choose,
) -> list[Result]:
    """Rank the options for every profile; ``weights[i]`` are profile i's (normalised here)."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, p in enumerate(profiles):
        key = (*(getattr(p, f) for f in CATEGORICAL), tuple(sorted(weights[i].items())))
        groups.setdefault(key, []).append(i)
    results: list[Result | None] = [None] * len(profiles)
    for idx in groups.values():
        for i, result in zip(
            idx, _group([profiles[i] for i in idx], weights[idx[0]], knowledge, options, choose), strict=True
        ):
            results[i] = result
    return [r for r in results if r is not None]


def vector_profile(members: Sequence[Profile]) -> Profile:
    """One profile whose numeric fields are arrays over ``members`` (an absent value is NaN): the
    array contract of ``app.host.hookspecs``. The only place a Profile holds arrays where its type says
    numbers."""
    arrays = {
        f: np.array([np.nan if getattr(p, f) is None else getattr(p, f) for p in members], dtype=float)
        for f in PROFILE_NUMBERS
    }
    return dataclasses.replace(members[0], **arrays)  # type: ignore[arg-type]


def _group(
    members: Sequence[Profile],
    weights: Mapping[str, float],
    knowledge: Knowledge,
    options: Sequence[str],
    choose: Choose,
) -> list[Result]:
    n = len(members)
    weights = scoring.normalise_weights(weights)
    vp = vector_profile(members)
    figures = {o: _assess_option(o, vp, members, knowledge, choose, n) for o in sorted(options)}
    per_hours = [f.per_hour for f in figures.values() if f.per_hour is not None]
    cheapest = np.min(np.stack(per_hours), axis=0) if per_hours else np.zeros(n)
    totals, scores = {}, {}
    for o, f in figures.items():
        if f.per_hour is None:
            continue
        assert f.fit is not None
        scores[o] = scoring.dimension_scores(
            per_hour=f.per_hour,
            cheapest=cheapest,
            productive=f.measures["efficiency"],
            goodput=f.measures["stability"],
            focus=f.measures["usability"],
        )
        totals[o] = scoring.total(weights, scores[o], f.fit)
    columns = [_column(o, _Lists.of(f, n), scores.get(o), totals.get(o), n) for o, f in figures.items()]
    results = []
    for row in zip(*columns, strict=True):
        ranking = tuple(
            make_entry((e[1], rank, *e[2:])) for rank, e in enumerate(sorted(row, key=itemgetter(0)), start=1)
        )
        results.append(Result(next((e.option for e in ranking if e.feasible), None), ranking))
    return results


def _column(option: str, f: _Lists, scores: Mapping[str, Any] | None, total: Any, n: int) -> list[tuple[Any, ...]]:
    """One option's entries over the group, column-wise: ``(sort key, option, score, scores, fit,
    feasible, annual_cost, total_cost, cost_per_useful_gpu_hour, cost_per_effective_gpu_hour, error,
    error_code)`` per profile. The sort key is ``scoring.ranked``'s — feasible first, higher total, higher sum of
    dimension scores and fit, option key — computed from the same floats in the same order; the
    shown figures are rounded as ``scoring.shown`` and ``round`` round one profile's."""
    if f.per_hour is None or scores is None:
        key = (-scoring.order_value(False, 0.0), -(sum(dict.fromkeys(DIMENSIONS, 0.0).values()) + 0.0), option)
        return [
            (
                key,
                option,
                _shown(0.0),
                dict.fromkeys(DIMENSIONS, 0.0),
                0.0,
                False,
                None,
                None,
                None,
                None,
                f.error,
                f.error_code,
            )
            for _ in range(n)
        ]
    assert f.fit is not None and f.feasible is not None and f.annual is not None and f.total is not None
    total_a = np.broadcast_to(np.asarray(total, dtype=float), (n,))
    dims_a = [np.broadcast_to(np.asarray(scores[d], dtype=float), (n,)) for d in DIMENSIONS]
    raw = total_a.tolist()
    dims = [d.tolist() for d in dims_a]
    shown_total = rounded(_clamped(total_a), 1)
    shown_dims = [rounded(_clamped(d), 1) for d in dims_a]
    fit = np.asarray(f.fit, dtype=float)
    useful = [None] * n if f.useful is None else rounded(np.asarray(f.useful, dtype=float), 4)
    return [
        (
            (-(t if ok else t - scoring.INFEASIBLE_OFFSET), -(sum(ds) + ft), option),
            option,
            st,
            dict(zip(DIMENSIONS, sd, strict=True)),
            rf,
            ok,
            a,
            tot,
            u,
            ph,
            None,
            None,
        )
        for ok, t, ds, ft, st, sd, rf, a, tot, u, ph in zip(
            f.feasible,
            raw,
            zip(*dims, strict=True),
            f.fit,
            shown_total,
            zip(*shown_dims, strict=True),
            rounded(fit, 1),
            rounded(np.asarray(f.annual, dtype=float), 2),
            rounded(np.asarray(f.total, dtype=float), 2),
            useful,
            rounded(np.asarray(f.per_hour, dtype=float), 4),
            strict=True,
        )
    ]


def rounded(values: np.ndarray, digits: int) -> list[float]:
    """``[round(float(x), digits) for x in values]``, computed at once: ``rint(x × 10^digits) ÷ 10^digits``
    is Python's correctly rounded answer wherever ``x × 10^digits`` is not within a few of its last
    bits of a half (the product's rounding cannot move it across one); those few are rounded by Python."""
    scale = 10.0**digits
    scaled = values * scale
    out: list[float] = (np.rint(scaled) / scale).tolist()
    with np.errstate(invalid="ignore"):
        near = np.abs(scaled - np.floor(scaled) - 0.5) <= np.spacing(np.abs(scaled)) * 8
    for i in np.flatnonzero(near | ~np.isfinite(scaled)).tolist():
        out[i] = round(float(values[i]), digits)
    return out


def _clamped(values: np.ndarray) -> np.ndarray:
    """``min(100, max(0, x))`` element by element as Python computes it (NaN gives 0)."""
    clamped: np.ndarray = np.where(np.isnan(values), 0.0, np.clip(values, 0.0, 100.0))
    return clamped


def _shown(value: float) -> float:
    """``scoring.shown`` for a Python float (what ``_floats`` gives): clamped to 0–100, one decimal."""
    return round(min(100.0, max(0.0, value)), 1)


def _floats(value: Any, n: int) -> list[float]:
    """An array over the group as Python floats: ``float(value[i])`` for every ``i``, at once."""
    floats: list[float] = np.broadcast_to(np.asarray(value, dtype=float), (n,)).tolist()
    return floats


@dataclass(frozen=True, slots=True)
class _Lists:
    """``_Figures`` as Python lists (``None``: the option could not be assessed, ``error`` says why)."""

    per_hour: list[float] | None
    annual: list[float] | None
    total: list[float] | None
    fit: list[float] | None
    feasible: list[bool] | None
    useful: list[float] | None
    error: str | None
    error_code: str | None = None

    @classmethod
    def of(cls, f: _Figures, n: int) -> _Lists:
        if f.per_hour is None:
            return cls(None, None, None, None, None, None, f.error, f.error_code)
        assert f.fit is not None and f.feasible is not None and f.annual is not None and f.total is not None
        return cls(
            per_hour=_floats(f.per_hour, n),
            annual=_floats(f.annual, n),
            total=_floats(f.total, n),
            fit=_floats(f.fit, n),
            feasible=np.broadcast_to(np.asarray(f.feasible, dtype=bool), (n,)).tolist(),
            useful=None if f.useful is None else _floats(f.useful, n),
            error=f.error,
        )


def _assess_option(
    option: str, vp: Profile, members: Sequence[Profile], knowledge: Knowledge, choose: Choose, n: int
) -> _Figures:
    try:
        try:
            quotes = [choose(option, vp, knowledge)[0]]
            profiles = [vp]
        except MissingKnowledge:
            raise
        except Exception:  # the array contract's fallback: a plugin that only takes single profiles, one call each
            quotes = [choose(option, p, knowledge)[0] for p in members]
            profiles = list(members)
        width = n if len(quotes) == 1 else 1

        def column(figure: Callable[[Quote], Any]) -> np.ndarray:
            return (
                np.concatenate([_array(figure(q), width) for q in quotes])
                if len(quotes) > 1
                else _array(figure(quotes[0]), n)
            )

        per_hour = column(lambda q: q.effective.expected)
        annual = column(lambda q: q.cost.annual.expected)
        total = column(lambda q: q.cost.total.expected)
        useful = column(lambda q: q.cost.per_useful_gpu_hour.expected)
        measures = {
            "efficiency": column(lambda q: q.efficiency.productive_share.expected),
            "stability": column(lambda q: q.stability.goodput.expected),
            "usability": column(lambda q: q.usability.model_focus_share.expected),
        }
        per_rule = [_rules(option, p, q, knowledge, width) for p, q in zip(profiles, quotes, strict=True)]
        applied = (np.concatenate([r[0] for r in per_rule]), np.concatenate([r[1] for r in per_rule]))
    except ISOLATED as exc:
        code, error = failure(exc)
        return _Figures(error=error, error_code=code)
    fit, feasible = applied
    return _Figures(per_hour, annual, total, measures, fit, feasible, useful=useful)


def _rules(option: str, profile: Profile, q: Quote, knowledge: Knowledge, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Fit points and feasibility of every profile: the scenario rules, and the hard constraints the
    chosen offers break."""
    ctx = rule_engine.Context(profile, q.metrics())
    fit = np.zeros(n)
    feasible = np.ones(n, dtype=bool)
    for _, where in q.violations:
        feasible &= ~np.broadcast_to(np.asarray(where, dtype=bool), (n,))
    for rule in knowledge.rules:
        if rule.option not in (option, "*"):
            continue
        mask = rule_engine.holds_many(rule, ctx, n)
        if rule.effect == "infeasible":
            feasible &= ~mask
        else:
            fit += np.where(mask, (rule.points or 0.0) * (1 if rule.effect == "bonus" else -1), 0.0)
    return fit, feasible


def _array(value: Any, n: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(value, dtype=float), (n,))
