"""The decision core, and the plugin SDK: everything an option plugin may use is exported here
(docs/plugins.md). The core is pure: no I/O, no clock, no globals, nothing of the rest of ``app``.
"""

from app.core import capital, model, offers, text
from app.core.errors import MissingKnowledge
from app.core.hooks import hookimpl
from app.core.knowledge import ANY, Assumption, GpuSpec, Knowledge, Price, Server, SourceRef
from app.core.model import ZERO, Inputs
from app.core.offers import Offer
from app.core.option import OptionPlugin
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
    "Cost",
    "Efficiency",
    "GpuSpec",
    "Inputs",
    "Knowledge",
    "LineItem",
    "MissingKnowledge",
    "Offer",
    "OptionPlugin",
    "OptionSpec",
    "Price",
    "Profile",
    "Range",
    "Server",
    "SourceRef",
    "Stability",
    "Usability",
    "Violation",
    "capital",
    "ceil_number",
    "hookimpl",
    "model",
    "offers",
    "text",
]
