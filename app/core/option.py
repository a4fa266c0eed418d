"""The base of an option plugin: declare the option, its kernel, the SDK it is written for and its
words; the hooks are done here.

    class SpotKernel(OfferKernel):                   # an option that buys offers
        requires = ("spot_interruptions_per_gpu_year",)  # the assumptions it reads beyond the shared ones
        def compile_group(self, gpu_model): ...      # the candidates, compiled once
        def quotes(self, at, candidates): ...        # numbers per profile
        def materialise(self, profile, quote): ...   # words, for what is answered

    class SpotInstances(OptionPlugin):
        sdk = ">=4,<5"                               # the SDK versions it is written for
        spec = OptionSpec(key="spot_instances", name="Spot instances", description="…", version="0.1")
        kernel = SpotKernel
        messages = OptionPlugin.catalogs("spot_option", "locales/{lang}.toml")

    plugin = SpotInstances()

The entry point names the instance (``spot_instances = "spot_option:plugin"``); pluggy registers it
and its hook methods are the hooks. docs/plugins.md walks through a complete one.
"""

from __future__ import annotations

import datetime as dt
import tomllib
from collections.abc import Mapping
from importlib.resources import files
from typing import Any, ClassVar

from app.core.declarations import OptionSpec
from app.core.hooks import hookimpl
from app.core.kernel import Kernel, Roles
from app.core.knowledge import Knowledge
from app.core.vocab import LANGUAGES


class OptionPlugin:
    """One deployment option: its ``spec``, the ``kernel`` it compiles to, the SDK range it supports
    (``sdk``, checked when the service starts) and its message catalogs (``messages``)."""

    #: the SDK versions the plugin is written for, a PEP 440 specifier (``">=4,<5"``): the service
    #: refuses to start with a plugin whose range excludes ``app.sdk.__version__``; there is no default
    sdk: ClassVar[str]
    #: the option: its key, name, description, version, the plans it sells and the roles it takes
    spec: ClassVar[OptionSpec]
    #: the kernel class the option compiles to, once per knowledge version, currency and ``as_of`` period
    kernel: ClassVar[type[Kernel]]
    #: the words of the plugin's sentences, by language: ``{"en": catalog, "zh": catalog}`` (each a TOML
    #: table of message codes; ``catalogs`` reads them from the package's files)
    messages: ClassVar[Mapping[str, Mapping[str, Any]]] = {}

    @staticmethod
    def catalogs(package: str, pattern: str) -> dict[str, dict[str, Any]]:
        """The catalogs the package ``package`` ships, one TOML file per language the service speaks:
        ``pattern`` with ``{lang}`` (``"locales/{lang}.toml"``); a language without its file is left out
        (its sentences read in English)."""
        folder = files(package)
        found: dict[str, dict[str, Any]] = {}
        for lang in LANGUAGES:
            path = folder.joinpath(*pattern.format(lang=lang).split("/"))
            if path.is_file():
                found[lang] = tomllib.loads(path.read_text("utf-8"))
        return found

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

    @hookimpl
    def compute_advisor_messages(self) -> Mapping[str, Mapping[str, Any]]:
        return self.messages
