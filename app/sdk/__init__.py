"""The plugin SDK: everything an option plugin may use is exported here (docs/plugins.md). It is pure:
no I/O, no clock, no globals, nothing of the rest of ``app``; the engine (``app.engine``) and the
plugin host (``app.host``) are built on it.
"""

from app.sdk import (
    bom,
    capital,
    cluster,
    columns,
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
from app.sdk.columns import ALL, EXPECTED, Columns
from app.sdk.errors import MissingKnowledge, NoOffer
from app.sdk.hooks import hookimpl
from app.sdk.inputs import Inputs
from app.sdk.kernel import Candidate, Kernel, Quote, Roles
from app.sdk.knowledge import ANY, Assumption, GpuSpec, Knowledge, Price, Server, SourceRef
from app.sdk.model import ZERO
from app.sdk.offer_kernel import OfferKernel
from app.sdk.offers import Offer
from app.sdk.option import OptionPlugin
from app.sdk.pricing import held_hours, whole_terms
from app.sdk.ranges import Range, ceil_number
from app.sdk.types import (
    HOURS_PER_YEAR,
    PROFILE_NUMBERS,
    Assessment,
    Cost,
    Efficiency,
    LineItem,
    OptionSpec,
    Profile,
    ProfileField,
    Stability,
    Usability,
    Violation,
)

__all__ = [
    "ALL",
    "ANY",
    "EXPECTED",
    "HOURS_PER_YEAR",
    "PROFILE_NUMBERS",
    "ZERO",
    "Assessment",
    "Assumption",
    "Candidate",
    "Columns",
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
    "ProfileField",
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
    "columns",
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
