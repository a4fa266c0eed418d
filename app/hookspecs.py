"""The plugin contract: one deployment option per plugin, found through the entry-point group
``compute_advisor.options``. Grow it, never break it: hooks are called with keyword arguments,
and an implementation may accept fewer arguments than its specification.
"""

from __future__ import annotations

import pluggy

from app.core.knowledge import Knowledge
from app.core.types import Assessment, OptionSpec, Profile

PROJECT = "compute_advisor"
ENTRY_POINT_GROUP = "compute_advisor.options"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def compute_advisor_options() -> list[OptionSpec]:  # type: ignore[empty-body]
    """Describe the options this plugin provides (usually one). Results of all plugins are
    concatenated; two plugins claiming the same key stop the service at start-up."""


@hookspec
def compute_advisor_assess(option: str, profile: Profile, knowledge: Knowledge) -> Assessment | None:
    """Assess ``option`` for ``profile`` from the read-only ``knowledge`` snapshot.

    Called only on the plugin that declared ``option``. Return ``None`` for an option you do not
    provide. Raise :class:`app.core.knowledge.MissingKnowledge` when the knowledge base lacks a
    row you need; any exception marks this option as failed and leaves the others untouched.
    Must be pure: no I/O, no clock, no globals.
    """
