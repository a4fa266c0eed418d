"""The base of an option plugin: declare the option, write ``assess``; the hooks are done here.

    class SpotInstances(OptionPlugin):
        spec = OptionSpec(key="spot_instances", name="Spot instances", description="…", version="0.1")

        def assess(self, profile: Profile, knowledge: Knowledge) -> Assessment:
            ...

    plugin = SpotInstances()
    compute_advisor_options = plugin.compute_advisor_options
    compute_advisor_assess = plugin.compute_advisor_assess

The module is what the entry point names (``spot_instances = "spot_option"``); its two hook
functions are the instance's bound methods. A plugin may also implement the hooks of
``app.hookspecs`` by hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from app.core import offers as offer_choice
from app.core.errors import NoOffer
from app.core.hooks import hookimpl
from app.core.knowledge import Knowledge
from app.core.offers import Offer
from app.core.ranges import holds_anywhere
from app.core.types import Assessment, OptionSpec, Profile


class OptionPlugin:
    """One deployment option: its ``spec`` and how it ``assess``es a profile."""

    spec: ClassVar[OptionSpec]

    @hookimpl
    def compute_advisor_options(self) -> list[OptionSpec]:
        return [self.spec]

    @hookimpl
    def compute_advisor_assess(self, option: str, profile: Profile, knowledge: Knowledge) -> Assessment | None:
        if option != self.spec.key:
            return None
        return self.assess(profile, knowledge)

    def assess(self, profile: Profile, knowledge: Knowledge) -> Assessment:
        """The option's assessment of ``profile`` from ``knowledge`` (see ``app.hookspecs``).

        By default, an option that sells offers: every offer of ``offers`` worth it (``shortlist``) is
        assessed by ``assess_offer``, and ``app.core.offers.choose`` keeps the cheapest feasible one per
        effective GPU-hour, the others becoming its alternatives."""
        found = self.offers(profile, knowledge)
        if not found:
            hardware = profile.gpu_model or "the reference server"
            raise NoOffer(
                f"no {self.spec.key} offer for {hardware} valid on {profile.as_of}"
                + (f" from {', '.join(profile.providers)}" if profile.providers else "")
                + (f" in {', '.join(profile.regions)}" if profile.regions else "")
            )
        shortlisted = offer_choice.shortlist(found, lambda o: self.acceptable(o, profile, knowledge))
        return offer_choice.choose([self.assess_offer(profile, knowledge, o) for o in shortlisted])

    def offers(self, profile: Profile, knowledge: Knowledge) -> Sequence[Offer]:
        """The offers this option may buy for the profile, priced in its currency."""
        raise NotImplementedError

    def assess_offer(self, profile: Profile, knowledge: Knowledge, offer: Offer) -> Assessment:
        """The option's assessment of ``profile`` when it buys ``offer``, with the constraints it breaks."""
        raise NotImplementedError

    def acceptable(self, offer: Offer, profile: Profile, knowledge: Knowledge) -> bool:
        """Whether ``offer`` breaks none of the profile's hard constraints (for every profile of a batch)."""
        lead = offer.row.lead_time_days or knowledge.assumption(self.spec.key, "lead_time_days").value
        return not any(
            holds_anywhere(v.violated) for v in offer_choice.violations(offer, profile, knowledge, lead_time_days=lead)
        )
