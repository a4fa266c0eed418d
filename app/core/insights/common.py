"""What the insight algorithms share: how they call the option plugins, and option variants."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from app.core import decision
from app.core.knowledge import Knowledge
from app.core.types import Assessment, Profile

#: assess(option, profile, knowledge) -> Assessment (raises when the option cannot be assessed)
Assess = Callable[[str, Profile, Knowledge], Assessment]
ENDS = ("low", "expected", "high")


@dataclass(frozen=True, slots=True)
class Variant:
    """An option, under one of its plans when it has several (the rental plans of an option that rents)."""

    option: str
    plan: str | None = None

    @property
    def label(self) -> str:
        return self.option if self.plan is None else f"{self.option}:{self.plan}"


class Costs:
    """Assessments of variants at a utilization (and cluster size), memoised."""

    def __init__(self, assess: Assess, profile: Profile, knowledge: Knowledge) -> None:
        self.assess, self.profile, self.knowledge = assess, profile, knowledge
        self.cache: dict[tuple[str, str | None, float, int], Assessment] = {}

    def assessment(self, v: Variant, utilization: float, gpus: int | None = None) -> Assessment:
        key = (v.option, v.plan, utilization, gpus or self.profile.gpus)
        if key not in self.cache:
            changes: dict[str, object] = {"utilization": utilization, "gpus": gpus or self.profile.gpus}
            if v.plan is not None:
                changes["rental_plan"] = v.plan
            self.cache[key] = self.assess(v.option, dataclasses.replace(self.profile, **changes), self.knowledge)  # type: ignore[arg-type]
        return self.cache[key]

    def per_hour(self, v: Variant, utilization: float, end: str) -> float:
        return float(getattr(self.assessment(v, utilization).cost.per_useful_gpu_hour, end))


class Decider:
    """The whole decision for a profile and a knowledge snapshot: assess every option, then rank."""

    def __init__(self, assess: Assess, options: Sequence[str], weights: Mapping[str, float]) -> None:
        self.assess, self.options, self.weights = assess, options, weights

    def __call__(self, profile: Profile, knowledge: Knowledge) -> decision.Decision:
        outcomes = decision.assess_all(self.options, lambda o: self.assess(o, profile, knowledge))
        return decision.decide(profile, outcomes, knowledge, self.weights)
