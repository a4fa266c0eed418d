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

from typing import ClassVar

from app.core.hooks import hookimpl
from app.core.knowledge import Knowledge
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
        """The option's assessment of ``profile`` from ``knowledge`` (see ``app.hookspecs``)."""
        raise NotImplementedError
