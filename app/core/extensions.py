"""Every extension point of the plugin SDK, declared in one place: what a plugin declares (class
attributes), what it writes or may replace (methods) and what it calls, with its default on the class.

docs/plugins.md's reference is generated from this table and the classes' own signatures, defaults
and docstrings (tests/test_sdk_reference.py fails when the two drift); tests/test_architecture.py
fails when a plugin overrides a name of ``Kernel``/``OfferKernel``/``OptionPlugin`` that is not here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: ``declare``: a class attribute the plugin sets; ``write``: a method it must write; ``replace``: a
#: method with a default it may replace (calling ``super()``); ``call``: a method it calls
Role = Literal["declare", "write", "replace", "call"]


@dataclass(frozen=True, slots=True)
class Extension:
    owner: str  # the class: OptionPlugin, Kernel or OfferKernel
    name: str
    role: Role
    required: bool = False


def _points(owner: str, role: Role, names: str, *, required: bool = False) -> tuple[Extension, ...]:
    return tuple(Extension(owner, n, role, required) for n in names.split())


EXTENSION_POINTS: tuple[Extension, ...] = (
    *_points("OptionPlugin", "declare", "sdk spec kernel", required=True),
    *_points("OptionPlugin", "declare", "messages"),
    *_points("OptionPlugin", "call", "catalogs"),
    *_points("Kernel", "write", "compile_group quotes materialise acceptable violation_reason", required=True),
    *_points("Kernel", "declare", "requires one_per_provider"),
    *_points("Kernel", "replace", "candidates no_offer prepare refused expected_choice"),
    *_points("Kernel", "call", "value ref refs columns"),
    *_points("OfferKernel", "declare", "setup_steps", required=True),
    *_points("OfferKernel", "declare", "preemptible_plans"),
    *_points("OfferKernel", "replace", "jurisdiction lead bridge machines acceptable violation_reason"),
    *_points(
        "OfferKernel",
        "call",
        "offers price_rows price derived_offers candidate facilities bill own held_share storage stored "
        "storage_lines storage_items subject_name provider_name lead_refs constraints scaling efficiency "
        "stability software_work machine_work terms finish expected_keys assessment_of efficiency_refs stability_refs "
        "usability_refs",
    ),
)
