"""What the insight algorithms share: how they call the option plugins, and option variants."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from app.core.columns import ALL, EXPECTED
from app.core.kernel import Quote
from app.core.knowledge import Knowledge
from app.core.types import Assessment, Profile
from app.engine import decision

#: assess(option, profile, knowledge) -> Assessment (raises when the option cannot be assessed)
Assess = Callable[[str, Profile, Knowledge], Assessment]
ENDS = ("low", "expected", "high")


class Model(Protocol):
    """What the insights run: the options' kernels (``app.host.options.OptionHost``, or the service's
    engine, which isolates and logs failures)."""

    def assess(self, option: str, profile: Profile, knowledge: Knowledge) -> Assessment:
        """The option's assessment, materialised (with its sentences)."""

    def choose(
        self, option: str, profile: Profile, knowledge: Knowledge, ends: tuple[int, ...] = ALL
    ) -> tuple[Quote, int]:
        """The option's cheapest feasible quote (numbers only, at the range ends ``ends``: ``EXPECTED``
        leaves the others NaN) and how many offers were quoted."""


@dataclass(frozen=True, slots=True)
class Variant:
    """An option, under one of its plans when it has several (the rental plans of an option that rents)."""

    option: str
    plan: str | None = None

    @property
    def label(self) -> str:
        return self.option if self.plan is None else f"{self.option}:{self.plan}"


class Costs:
    """Quotes of variants at a utilization (and cluster size), memoised; ``ends``: the range ends the
    caller reads (names), the kernels computing only those."""

    def __init__(self, model: Model, profile: Profile, knowledge: Knowledge, ends: Sequence[str] = ENDS) -> None:
        self.model, self.profile, self.knowledge = model, profile, knowledge
        self.ends = tuple(ends)
        self.kernel_ends = EXPECTED if self.ends == ("expected",) else ALL
        self.cache: dict[tuple[str, str | None, float, int], Quote] = {}

    def at(self, v: Variant, **changes: object) -> Profile:
        """The profile with ``changes`` (utilization, GPUs: numbers or arrays) on ``v``'s plan."""
        if v.plan is not None:
            changes["rental_plan"] = v.plan
        return dataclasses.replace(self.profile, **changes)  # type: ignore[arg-type]

    def quote(self, v: Variant, utilization: float, gpus: int | None = None) -> Quote:
        key = (v.option, v.plan, utilization, gpus or self.profile.gpus)
        if key not in self.cache:
            profile = self.at(v, utilization=utilization, gpus=gpus or self.profile.gpus)
            # only the ends the caller reads (the break-even sentence: the expected end alone)
            self.cache[key] = self.model.choose(v.option, profile, self.knowledge, self.kernel_ends)[0]
        return self.cache[key]

    def per_hour(self, v: Variant, utilization: float, end: str) -> float:
        return float(getattr(self.quote(v, utilization).cost.per_useful_gpu_hour, end))

    def curve(self, v: Variant, utilizations: Sequence[float]) -> dict[str, list[float]]:
        """``v``'s cost per useful GPU-hour at each of ``utilizations``, per range end: one quote of an
        array of utilizations (the array contract), as Python floats."""
        u = np.asarray(utilizations, dtype=float)
        quote = self.model.choose(v.option, self.at(v, utilization=u), self.knowledge, self.kernel_ends)[0]
        r = quote.per_useful
        return {end: np.broadcast_to(np.asarray(getattr(r, end), dtype=float), u.shape).tolist() for end in self.ends}


class Decider:
    """The whole decision for a profile and a knowledge snapshot: assess every option, then rank."""

    def __init__(self, model: Model, options: Sequence[str], weights: Mapping[str, float]) -> None:
        self.model, self.options, self.weights = model, options, weights

    def __call__(self, profile: Profile, knowledge: Knowledge) -> decision.Decision:
        outcomes = decision.assess_all(self.options, lambda o: self.model.assess(o, profile, knowledge))
        return decision.decide(profile, outcomes, knowledge, self.weights)
