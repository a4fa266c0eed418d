"""The plugin contract: one deployment option per plugin, found through the entry-point group
``compute_advisor.options``. Grow it, never break it.

Hooks are called with keyword arguments only (pluggy refuses positional calls), so an
implementation may accept fewer arguments than its specification and specifications can grow.
(pluggy reads a hook's argument names from its positional parameters, which is why the
specifications below carry no ``*``.)

**The array contract** (docs/plugins.md, "The array contract"). To rank thousands of profiles at
once (``POST /v1/evaluations``) and to draw thousands of Monte Carlo samples (``/v1/uncertainty``, a
recommendation's confidence), the service quotes a kernel (``Kernel.quotes``, through
``app.core.columns.Columns``) — or calls the deprecated ``compute_advisor_assess`` — with NumPy arrays
where numbers usually are:

- batch evaluations (``app.engine.batch``): the profile's numeric fields — ``gpus``, ``utilization``,
  ``horizon_years``, ``team_size``, ``start_within_days``, ``capex_budget``, ``delay_cost_per_day``
  (``app.core.types.PROFILE_NUMBERS``) — are NumPy float arrays, one element per profile (an absent
  ``capex_budget`` or ``delay_cost_per_day`` is NaN); the other fields are the same for the whole
  group, and the knowledge is the plain snapshot;
- Monte Carlo runs (``app.engine.insights.uncertainty``): the profile is plain; the ``value`` of every
  price and assumption row whose low is below its high is a ``Range`` whose three ends are one NumPy
  array of draws. Nothing else of the snapshot is sampled.

A plugin that computes with ``Range`` arithmetic, ``+ - * /`` and the SDK's helpers (``app.sdk``:
``Columns.ceil``/``where``/``gt``/``holds``, ``Range.cap``/``floor_at``/``ceil``, ``where``…) works
unchanged: everything is element-wise. It must not branch on such a value (``if profile.gpus > 64``),
convert it (``int(...)``, ``round``) or format it outside the SDK's words (``num``, ``money_range``…).
A plugin that cannot take arrays may raise: a batch then calls it once per profile, only slower (a
``MissingKnowledge`` is not retried); a Monte Carlo run reports the option's error.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from app.core.declarations import OptionSpec
from app.core.hooks import ENTRY_POINT_GROUP, PROJECT, hookimpl, hookspec
from app.core.kernel import Kernel, Roles
from app.core.knowledge import Knowledge
from app.core.types import Assessment, Profile

__all__ = ["ENTRY_POINT_GROUP", "PROJECT", "hookimpl", "hookspec"]


@hookspec
def compute_advisor_options() -> list[OptionSpec]:  # type: ignore[empty-body]
    """Describe the options this plugin provides (usually one). Results of all plugins are
    concatenated; two plugins claiming the same key stop the service at start-up."""


@hookspec
def compute_advisor_messages() -> Mapping[str, Mapping[str, Any]]:  # type: ignore[empty-body]
    """The words this plugin's sentences use, by language: ``{"en": catalog, "zh": catalog}``, each
    catalog mapping the message codes the plugin passes to ``app.sdk.msg`` to ``str.format``
    templates (nested tables flatten to dotted codes, as a TOML file's do). Called once, when the
    plugins load; every plugin's answer is kept apart and merged into the service's catalogs.

    A plugin may not word a code the service words itself, nor one another plugin words: either
    stops the service at start-up (``PluginError`` naming the plugin and the code). A language the
    service does not speak, or a template whose placeholders differ from its English one, does too.
    A code a language lacks is shown in its English text (the message's own).
    """


@hookspec
def compute_advisor_assess(option: str, profile: Profile, knowledge: Knowledge) -> Assessment | None:
    """SDK v2, deprecated in SDK 4 (a warning at start) and removed in SDK 5: compile a kernel instead
    (``compute_advisor_compile``). Assess ``option`` for ``profile`` from the read-only ``knowledge`` snapshot.

    Called only on the plugin that declared ``option``. Return ``None`` for an option you do not
    provide. Raise :class:`app.sdk.MissingKnowledge` when the knowledge base lacks a row you
    need; any exception marks this option as failed and leaves the others untouched. Must be
    pure: no I/O, no clock, no globals. ``profile`` and ``knowledge`` may carry arrays (see the
    array contract above).
    """


@hookspec
def compute_advisor_compile(
    option: str, knowledge: Knowledge, currency: str, as_of: dt.date, roles: Roles
) -> Kernel | None:
    """Compile ``option`` for the read-only ``knowledge`` snapshot, answers in ``currency`` and the
    ``as_of`` validity period that contains ``as_of`` (docs/plugins.md "Kernels"): a
    :class:`app.sdk.Kernel` that quotes profiles by arithmetic alone (``OptionPlugin`` implements this
    hook from its ``spec`` and ``kernel``).

    Called only on the plugin that declared ``option``, at most once per snapshot, currency and
    period (the service caches the kernel); return ``None`` for an option you do not provide.
    ``roles(role, knowledge, currency, as_of)`` gives the kernel of the option that declares a role
    (``"bridges_lead_time"``), or None. Raise :class:`app.sdk.MissingKnowledge` when the knowledge
    base lacks a row you need. Must be pure: no I/O, no clock, no globals.

    A plugin that implements only the deprecated ``compute_advisor_assess`` (SDK v2) is still asked
    once per profile until SDK 5.
    """
    return None
