"""The loaded option plugins, each option bound to the one plugin that provides it, and the one
typed call of the assess hook (pluggy returns ``Any``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pluggy

from app.core.knowledge import Knowledge
from app.core.model import with_effective_cost
from app.core.types import Assessment, OptionSpec, Profile


class PluginError(RuntimeError):
    """A plugin broke the contract at start-up (duplicate option key, malformed answer)."""


@dataclass(frozen=True, slots=True)
class LoadedOption:
    spec: OptionSpec
    plugin_name: str
    plugin_version: str
    caller: Any  # pluggy's subset hook caller for this plugin alone


class OptionHost:
    """The loaded options, each bound to the one plugin that provides it."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.pm = pm
        dist_versions = {pm.get_name(p): d.version for p, d in pm.list_plugin_distinfo()}
        options: dict[str, LoadedOption] = {}
        for impl in pm.hook.compute_advisor_options.get_hookimpls():
            specs = impl.function()
            if not isinstance(specs, list) or not all(isinstance(s, OptionSpec) for s in specs):
                raise PluginError(f"plugin {impl.plugin_name}: compute_advisor_options must return list[OptionSpec]")
            others = [p for p in pm.get_plugins() if p is not impl.plugin]
            caller = pm.subset_hook_caller("compute_advisor_assess", remove_plugins=others)
            for spec in specs:
                if spec.key in options:
                    raise PluginError(
                        f"option '{spec.key}' is provided by both {options[spec.key].plugin_name} "
                        f"and {impl.plugin_name}"
                    )
                version = dist_versions.get(impl.plugin_name, spec.version)
                options[spec.key] = LoadedOption(spec, impl.plugin_name, version, caller)
        self.options: dict[str, LoadedOption] = dict(sorted(options.items()))

    def assess(self, option: str, profile: Profile, knowledge: Knowledge) -> Assessment:
        """Ask the option's own plugin. Exceptions propagate: the caller isolates them per option."""
        results = self.options[option].caller(option=option, profile=profile, knowledge=knowledge)
        found = [r for r in results if r is not None]
        if len(found) != 1 or not isinstance(found[0], Assessment):
            raise PluginError(f"plugin for '{option}' returned {len(found)} assessments instead of one")
        return with_effective_cost(found[0])
