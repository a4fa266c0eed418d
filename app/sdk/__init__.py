"""compute-advisor's plugin SDK, version 4: everything an option plugin imports, and all it imports.

A plugin declares the versions it is written for (``OptionPlugin.sdk = ">=4,<5"``); the service
refuses to start with one whose range excludes ``__version__``. The names below are the whole
surface; what they are built on (``app.core``) may change in any release and is not for plugins.
docs/plugins.md is the guide; its reference section is generated from these names.

- declaring an option: ``OptionPlugin``, ``OptionSpec``, ``ProfileField``, ``hookimpl``
- pricing it: ``OfferKernel`` (an option that buys offers; ``Kernel`` for another), ``Candidate``,
  ``Quote``, ``Columns``, ``Offer``, ``Price``, ``Knowledge``, ``Range``, ``Bridge``, ``Bill``,
  ``Size`` and the formulas ``annuity``, ``held_at``, ``billed_at``, ``where``
- answering: ``Profile``, ``Assessment``, ``LineItem``, ``SourceRef``, ``Efficiency``, ``Stability``,
  ``Usability``, and the words: ``msg``, ``num``, ``pct``, ``money``, ``money_range``, ``span``,
  ``plan_name``
- failing: ``MissingKnowledge``, ``NoOffer``
- constants: ``ZERO``, ``HOURS_PER_YEAR``, ``DAYS_PER_YEAR``

``app.sdk.testing`` builds a knowledge snapshot from a seed directory for a plugin's own tests.
"""

from app.core.capital import Bridge, where
from app.core.cluster import Bill, Size
from app.core.columns import Columns
from app.core.declarations import OptionSpec, ProfileField
from app.core.errors import MissingKnowledge, NoOffer
from app.core.hooks import hookimpl
from app.core.kernel import Kernel
from app.core.knowledge import Knowledge, Price, SourceRef
from app.core.model import DAYS_PER_YEAR, ZERO
from app.core.offer_kernel import OfferKernel
from app.core.offers import Offer
from app.core.option import OptionPlugin
from app.core.pricing import annuity, billed_at, held_at
from app.core.quotes import Candidate, Quote
from app.core.ranges import Range
from app.core.text import money, money_range, msg, num, pct, plan_name, span
from app.core.types import HOURS_PER_YEAR, Assessment, Efficiency, LineItem, Profile, Stability, Usability
from app.core.version import SDK_VERSION

#: the SDK's version (semantic versioning): a plugin's ``OptionPlugin.sdk`` range must contain it
__version__ = SDK_VERSION

__all__ = [
    "DAYS_PER_YEAR",
    "HOURS_PER_YEAR",
    "ZERO",
    "Assessment",
    "Bill",
    "Bridge",
    "Candidate",
    "Columns",
    "Efficiency",
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
    "Size",
    "SourceRef",
    "Stability",
    "Usability",
    "__version__",
    "annuity",
    "billed_at",
    "held_at",
    "hookimpl",
    "money",
    "money_range",
    "msg",
    "num",
    "pct",
    "plan_name",
    "span",
    "where",
]
