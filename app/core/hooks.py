"""pluggy's markers for compute-advisor's hooks: the project name both specs and implementations use."""

from __future__ import annotations

import pluggy

PROJECT = "compute_advisor"
#: the entry-point group option plugins register in (built-ins included)
ENTRY_POINT_GROUP = "compute_advisor.options"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)
