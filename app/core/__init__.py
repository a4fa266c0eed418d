"""The decision core, and the plugin SDK: everything an option plugin may use is exported here
(docs/plugins.md). The core is pure: no I/O, no clock, no globals, nothing of the rest of ``app``.
"""

from app.core import (
    bom,
    capital,
    cluster,
    constraints,
    inputs,
    kernel,
    model,
    offer_kernel,
    offers,
    pricing,
    text,
    vocab,
)
from app.core.errors import MissingKnowledge, NoOffer
from app.core.hooks import hookimpl
from app.core.inputs import Inputs
from app.core.kernel import Candidate, Kernel, Quote, Roles
from app.core.knowledge import ANY, Assumption, GpuSpec, Knowledge, Price, Server, SourceRef
from app.core.model import ZERO
from app.core.offer_kernel import OfferKernel
from app.core.offers import Offer
from app.core.option import OptionPlugin
from app.core.pricing import held_hours, whole_terms
from app.core.ranges import Range, ceil_number
from app.core.types import (
    HOURS_PER_YEAR,
    PROFILE_NUMBERS,
    Assessment,
    Cost,
    Efficiency,
    LineItem,
    OptionSpec,
    Profile,
    Stability,
    Usability,
    Violation,
)

__all__ = [
    "ANY",
    "HOURS_PER_YEAR",
    "PROFILE_NUMBERS",
    "ZERO",
    "Assessment",
    "Assumption",
    "Candidate",
    "Cost",
    "Efficiency",
    "GpuSpec",
    "Inputs",
    "Kernel",
    "Knowledge",
    "LineItem",
    "MissingKnowledge",
    "NoOffer",
    "Offer",
    "OfferKernel",
    "OptionPlugin",
    "OptionSpec",
    "Price",
    "Profile",
    "Quote",
    "Range",
    "Roles",
    "Server",
    "SourceRef",
    "Stability",
    "Usability",
    "Violation",
    "bom",
    "capital",
    "ceil_number",
    "cluster",
    "constraints",
    "held_hours",
    "hookimpl",
    "inputs",
    "kernel",
    "model",
    "offer_kernel",
    "offers",
    "pricing",
    "text",
    "vocab",
    "whole_terms",
]
