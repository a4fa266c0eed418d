"""Many profiles at once (``POST /v1/evaluations``): the same model and scores, vectorised.

Profiles that share their categorical fields (ops team, data security, rental plan, currency,
GPU model, date, weights) form a group; within a group every numeric field becomes a NumPy array
and each option's kernel runs once for the whole group — its arithmetic is element-wise
(``app.core.columns``). A plugin that cannot take arrays is called once per profile
instead, so a third-party option still works, only slower. Scores, fit points, feasibility and
ranking come from ``app.engine.scoring``, as for one profile; the sentences (reasons) are left out.

The answer is column by column (``Rankings``): each option's shown figures over every profile, and
each profile's order of the options, ranked and rounded with array operations over the whole batch
once every group is assessed. A caller makes its own answer objects from the columns, once per
option and profile; ``Rankings`` also reads as a sequence of ``Result``, one profile at a time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter
from typing import Any, NamedTuple, TypeVar, overload

import numpy as np

from app.core.errors import ISOLATED, MissingKnowledge, failure
from app.core.kernel import Quote
from app.core.knowledge import Knowledge
from app.core.types import PROFILE_NUMBERS, Profile
from app.core.vocab import DIMENSIONS
from app.engine import rules as rule_engine
from app.engine import scoring

#: the profile's fields a group shares (every other field is one of ``PROFILE_NUMBERS``, an array over the group)
CATEGORICAL = (
    "ops_team",
    "data_security",
    "rental_plan",
    "currency",
    "gpu_model",
    "as_of",
    "providers",
    "regions",
    "buyer_country",
    "option_fields",
    "precision",
)
#: choose(option, profile, knowledge, ends) -> (the option's chosen quote, offers quoted): ``OptionHost.choose``
Choose = Callable[[str, Profile, Knowledge, tuple[int, ...]], tuple[Quote, int]]
T = TypeVar("T")


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


@dataclass(frozen=True, slots=True)
class Column:
    """One option's entries over a batch, profile by profile, as answers show them (Python values:
    rounded as ``scoring.shown`` and ``round`` round one profile's; ``None`` for the costs of a profile
    the option could not assess, ``error`` and ``error_code`` saying why)."""

    option: str
    #: the option's place in each profile's ranking (1: first)
    rank: list[int]
    score: list[float]
    #: one list per dimension, in the order of ``DIMENSIONS``
    scores: tuple[list[float], ...]
    fit: list[float]
    feasible: list[bool]
    annual_cost: list[float | None]
    total_cost: list[float | None]
    cost_per_useful_gpu_hour: list[float | None]
    cost_per_effective_gpu_hour: list[float | None]
    error: list[str | None]
    error_code: list[str | None]

    def entry(self, i: int) -> Entry:
        return make_entry(
            (
                self.option,
                self.rank[i],
                self.score[i],
                dict(zip(DIMENSIONS, (d[i] for d in self.scores), strict=True)),
                self.fit[i],
                self.feasible[i],
                self.annual_cost[i],
                self.total_cost[i],
                self.cost_per_useful_gpu_hour[i],
                self.cost_per_effective_gpu_hour[i],
                self.error[i],
                self.error_code[i],
            )
        )


@dataclass(frozen=True, slots=True, eq=False)
class Rankings(Sequence[Result]):
    """Every profile's ranking, column by column: what ``evaluate`` answers. A caller builds its own
    objects for each column (one per option and profile) and lays them out per profile with
    ``arranged``; ``rankings[i]`` is profile i's ``Result``, made when asked."""

    #: one per option, in option key order
    columns: tuple[Column, ...]
    #: ``order[r, i]``: the column of profile i's option ranked ``r + 1``
    order: np.ndarray
    recommended: list[str | None]

    def __len__(self) -> int:
        return len(self.recommended)

    @overload
    def __getitem__(self, i: int) -> Result: ...

    @overload
    def __getitem__(self, i: slice) -> list[Result]: ...

    def __getitem__(self, i: int | slice) -> Result | list[Result]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        j = range(len(self))[i]  # IndexError past either end, as a list's
        ranking = tuple(self.columns[c].entry(j) for c in self.order[:, j].tolist())
        return Result(self.recommended[j], ranking)

    def __iter__(self) -> Iterator[Result]:
        return (self[i] for i in range(len(self)))

    def arranged(self, made: Sequence[Sequence[T]]) -> list[list[T]]:
        """Per profile, its options' objects best first, from ``made[c][i]``: column c's object for profile i."""
        k, n = self.order.shape
        objects = np.fromiter(chain.from_iterable(made), dtype=object, count=k * n).reshape(k, n)
        arranged: list[list[T]] = np.take_along_axis(objects, self.order, axis=0).T.tolist()
        return arranged


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


class _Sheet:
    """A batch's figures as the groups fill them in: options (rows, in key order) × profiles (columns,
    in the batch's order); ranked and rounded at once when every group is in. An option a group could
    not assess keeps a total, scores and fit of 0, infeasible, no costs (NaN here) and the error."""

    def __init__(self, k: int, n: int) -> None:
        self.raw = np.zeros((k, n))
        self.scores = np.zeros((k, len(DIMENSIONS), n))
        self.fit = np.zeros((k, n))
        self.feasible = np.zeros((k, n), dtype=bool)
        #: annual cost, total cost, per useful GPU-hour, per effective GPU-hour
        self.costs = np.full((k, 4, n), np.nan)
        self.assessed = np.zeros((k, n), dtype=bool)
        self.error = np.full((k, n), None, dtype=object)
        self.error_code = np.full((k, n), None, dtype=object)

    def rankings(self, options: Sequence[str]) -> Rankings:
        """Every profile's order (``scoring.ranked_many``), each option's rank and the first feasible
        option per profile; the figures rounded as one profile's are, and made Python values."""
        k, n = self.raw.shape
        dims = [self.scores[:, d] for d in range(len(DIMENSIONS))]
        spreads = scoring.spread(dict(zip(DIMENSIONS, dims, strict=True)), self.fit)
        order = scoring.ranked_many(options, self.feasible, self.raw, np.asarray(spreads, dtype=float))
        rank = np.empty((k, n), dtype=np.intp)
        np.put_along_axis(rank, order, np.arange(1, k + 1)[:, None], axis=0)
        first_feasible = np.take_along_axis(self.feasible, order, axis=0)
        best = order[np.argmax(first_feasible, axis=0), np.arange(n)] if k else np.zeros(n, dtype=np.intp)
        chosen = np.where(first_feasible.any(axis=0), best, k)
        recommended: list[str | None] = np.array([*options, None], dtype=object)[chosen].tolist()
        score = rounded(_clamped(self.raw), 1).tolist()
        scores = rounded(_clamped(self.scores), 1).tolist()
        fit = rounded(self.fit, 1).tolist()
        costs = np.concatenate([rounded(self.costs[:, :2], 2), rounded(self.costs[:, 2:], 4)], axis=1)
        if self.assessed.all():
            cost_lists = costs.tolist()
        else:
            shown = costs.astype(object)
            shown[np.broadcast_to(~self.assessed[:, None], shown.shape)] = None
            cost_lists = shown.tolist()
        columns = tuple(
            Column(o, r, sc, tuple(ds), ft, fe, annual, total, useful, effective, e, ec)
            for o, r, sc, ds, ft, fe, (annual, total, useful, effective), e, ec in zip(
                options,
                rank.tolist(),
                score,
                scores,
                fit,
                self.feasible.tolist(),
                cost_lists,
                self.error.tolist(),
                self.error_code.tolist(),
                strict=True,
            )
        )
        return Rankings(columns, order, recommended)


def evaluate(
    profiles: Sequence[Profile],
    weights: Sequence[Mapping[str, float]],
    knowledge: Knowledge,
    options: Sequence[str],
    choose: Choose,
) -> Rankings:
    """Rank the options for every profile; ``weights[i]`` are profile i's (normalised here)."""
    categorical = attrgetter(*CATEGORICAL)
    # each mapping of weights as part of a key, made once per mapping (a batch often passes one for all)
    weight_keys: dict[int, tuple[Any, ...]] = {}
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, (fields, w) in enumerate(zip(map(categorical, profiles), weights, strict=True)):
        weight_key = weight_keys.get(id(w))
        if weight_key is None:
            weight_key = weight_keys[id(w)] = tuple(sorted(w.items()))
        groups.setdefault((fields, weight_key), []).append(i)
    keys = sorted(options)
    sheet = _Sheet(len(keys), len(profiles))
    for idx in groups.values():
        _group(np.array(idx), [profiles[i] for i in idx], weights[idx[0]], knowledge, keys, choose, sheet)
    return sheet.rankings(keys)


def vector_profile(members: Sequence[Profile]) -> Profile:
    """One profile whose numeric fields are arrays over ``members`` (an absent value is NaN): the
    array contract of ``app.host.hookspecs``. The only place a Profile holds arrays where its type says
    numbers."""
    arrays = {f: np.array(list(map(get, members)), dtype=float) for f, get in _NUMBERS}  # None gives NaN
    return dataclasses.replace(members[0], **arrays)  # type: ignore[arg-type]


_NUMBERS = [(f, attrgetter(f)) for f in PROFILE_NUMBERS]


def _group(
    idx: np.ndarray,
    members: Sequence[Profile],
    weights: Mapping[str, float],
    knowledge: Knowledge,
    options: Sequence[str],
    choose: Choose,
    sheet: _Sheet,
) -> None:
    """Assess and score every option for one group (profiles ``idx`` of the batch), into ``sheet``."""
    n = len(members)
    weights = scoring.normalise_weights(weights)
    vp = vector_profile(members)
    figures = [_assess_option(o, vp, members, knowledge, choose, n) for o in options]
    per_hours = [f.per_hour for f in figures if f.per_hour is not None]
    cheapest = np.min(np.stack(per_hours), axis=0) if per_hours else np.zeros(n)
    for j, f in enumerate(figures):
        if f.per_hour is None:
            sheet.error[j, idx] = f.error
            sheet.error_code[j, idx] = f.error_code
            continue
        assert f.fit is not None and f.feasible is not None and f.annual is not None and f.total is not None
        assert f.useful is not None
        scores = scoring.dimension_scores(
            per_hour=f.per_hour,
            cheapest=cheapest,
            productive=f.measures["efficiency"],
            goodput=f.measures["stability"],
            focus=f.measures["usability"],
        )
        sheet.raw[j, idx] = scoring.total(weights, scores, f.fit)
        for d, dimension in enumerate(DIMENSIONS):
            sheet.scores[j, d, idx] = scores[dimension]
        sheet.fit[j, idx] = f.fit
        sheet.feasible[j, idx] = f.feasible
        costs = sheet.costs[j]
        for c, figure in enumerate((f.annual, f.total, f.useful, f.per_hour)):
            costs[c, idx] = figure
        sheet.assessed[j, idx] = True


def rounded(values: np.ndarray, digits: int) -> np.ndarray:
    """``round(float(x), digits)`` for every element, computed at once: ``rint(x × 10^digits) ÷ 10^digits``
    is Python's correctly rounded answer wherever ``x × 10^digits`` is not within a few of its last
    bits of a half (the product's rounding cannot move it across one); those few, and the products
    too large for a float, are rounded by Python. NaN and infinities are themselves, as ``round`` answers."""
    scale = 10.0**digits
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = values * scale
        out: np.ndarray = np.rint(scaled) / scale
        near = np.abs(scaled - np.floor(scaled) - 0.5) <= np.spacing(np.abs(scaled)) * 8
    finite = np.isfinite(values)
    np.copyto(out, values, where=~finite)
    flat, given = out.reshape(-1), np.asarray(values).reshape(-1)
    for i in np.flatnonzero((near | ~np.isfinite(scaled)) & finite).tolist():
        flat[i] = round(float(given[i]), digits)
    return out


def _clamped(values: np.ndarray) -> np.ndarray:
    """``min(100, max(0, x))`` element by element as Python computes it (NaN gives 0)."""
    clamped: np.ndarray = np.where(np.isnan(values), 0.0, np.clip(values, 0.0, 100.0))
    return clamped


def _assess_option(
    option: str, vp: Profile, members: Sequence[Profile], knowledge: Knowledge, choose: Choose, n: int
) -> _Figures:
    # a batch answers the expected figures: the other ends only where a scenario rule tests them
    ends = rule_engine.ends_read(knowledge.rules)
    try:
        try:
            quotes = [choose(option, vp, knowledge, ends)[0]]
            profiles = [vp]
        except MissingKnowledge:
            raise
        except Exception:  # the array contract's fallback: a plugin that only takes single profiles, one call each
            quotes = [choose(option, p, knowledge, ends)[0] for p in members]
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
