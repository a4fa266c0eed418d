"""The base of an option plugin: declare the option and its kernel; the hooks are done here.

    class SpotKernel(OfferKernel):          # app.sdk.pricing: an option that buys offers
        def compile_group(self, gpu_model): ...   # the candidates, compiled once
        def quotes(self, profile, candidates): ...  # numbers per profile
        def materialise(self, profile, quote): ...  # words, for what is answered

    class SpotInstances(OptionPlugin):
        spec = OptionSpec(key="spot_instances", name="Spot instances", description="…", version="0.1")
        kernel = SpotKernel

    plugin = SpotInstances()
    compute_advisor_options = plugin.compute_advisor_options
    compute_advisor_compile = plugin.compute_advisor_compile

The module is what the entry point names (``spot_instances = "spot_option"``); its hook functions
are the instance's bound methods. docs/plugins.md walks through a complete one.
"""

from __future__ import annotations

import datetime as dt
from typing import ClassVar

from app.sdk.hooks import hookimpl
from app.sdk.kernel import Kernel, Roles
from app.sdk.knowledge import Knowledge
from app.sdk.types import OptionSpec


class OptionPlugin:
    """One deployment option: its ``spec`` and the ``kernel`` it compiles to."""

    spec: ClassVar[OptionSpec]
    kernel: ClassVar[type[Kernel]]

    @hookimpl
    def compute_advisor_options(self) -> list[OptionSpec]:
        return [self.spec]

    @hookimpl
    def compute_advisor_compile(
        self, option: str, knowledge: Knowledge, currency: str, as_of: dt.date, roles: Roles
    ) -> Kernel | None:
        if option != self.spec.key:
            return None
        return self.kernel(self.spec, knowledge, currency, as_of, roles)
