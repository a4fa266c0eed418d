"""API v1 schemas of the catalog: the options, and the knowledge base's rows with their sources.

A row is shown as its record (``app.core.records``, the entity's one declaration): the read schema is the
record under the API's name, or, for a record that holds a Range, the record with the Range spelled out as
its ends (``spelled_out``: the columns ``app.domain.catalog.service.flat`` fills)."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

import msgspec

from app.core.entities import declared
from app.core.records import (
    Assumption,
    AvailabilityRule,
    Condition,
    ExchangeRate,
    GpuSpec,
    Price,
    Provider,
    Region,
    Rule,
    Server,
)


def spelled_out(record: type, name: str, *, drop: tuple[str, ...], doc: str) -> type[msgspec.Struct]:
    """A read schema named ``name`` of ``record``'s fields (but ``drop``), in order, each Range spelled out
    as its ends' columns (``app.core.entities.Ends``: numbers, null where the Range may be; ``expected`` its
    mean)."""
    fields: list[tuple[Any, ...]] = []
    for f in declared(record):
        if f.name in drop:
            continue
        if f.ends is not None:
            fields += [(column, float | None if f.nullable else float) for column, _ in f.ends.columns()]
        else:
            fields.append((f.name, f.type) if f.default is msgspec.NODEFAULT else (f.name, f.type, f.default))
    return msgspec.defstruct(name, fields, module=__name__, namespace={"__doc__": doc})


class ProfileFieldRead(msgspec.Struct):
    """A profile field an option declares: requests send it in ``option_fields``."""

    name: str
    description: str
    kind: str
    #: a number (integral or not), a string, a boolean, or none
    default: float | str | bool | None
    minimum: float | None
    maximum: float | None
    choices: list[str]


class OptionRead(msgspec.Struct):
    key: str
    name: str
    description: str
    plugin: str
    plugin_version: str
    #: the plans the option's price rows may carry (None: the plugin declares none, any is read)
    price_plans: list[str] | None
    #: the plans a profile's ``rental_plan`` may name to narrow this option to one
    rental_plans: list[str]
    #: the fields of a profile the option reads beyond the service's own (sent in ``option_fields``)
    profile_fields: list[ProfileFieldRead] = msgspec.field(default_factory=list)


class Page(msgspec.Struct):
    knowledge_version: str
    total: int
    limit: int
    offset: int


class OptionList(msgspec.Struct):
    items: list[OptionRead]


class GpuRead(GpuSpec, frozen=True):
    """A GPU model: the record ``GpuSpec``."""


class GpuList(Page):
    items: list[GpuRead]


class ServerRead(Server, frozen=True):
    """A server SKU: the record ``Server``."""


class ServerList(Page):
    items: list[ServerRead]


if TYPE_CHECKING:  # made from the record when the module is imported: to the type checker, a Struct
    PriceRead = msgspec.Struct
else:
    PriceRead = spelled_out(
        Price,
        "PriceRead",
        drop=("book",),
        doc="A list price row: the record ``Price``, its range as low, expected (the mean: what answers compute "
        "with) and high beside its mode (the source's most likely figure), its lead time as its ends.",
    )


class PriceList(Page):
    items: list[PriceRead]


class OfferList(Page):
    items: list[PriceRead]


class ProviderRead(Provider, frozen=True):
    """A provider: the record ``Provider`` (its name in the reader's language)."""


class ProviderList(Page):
    items: list[ProviderRead]


class RegionRead(Region, frozen=True):
    """A region of the hierarchy: the record ``Region`` (``parent`` is the region it lies in, null only for
    ``global``; ``members`` a bloc's member countries, null for every other region)."""


class RegionList(Page):
    items: list[RegionRead]


class AvailabilityRuleRead(AvailabilityRule, frozen=True):
    """An availability rule: the record ``AvailabilityRule`` (``effect`` ``unavailable``: refused;
    ``licence_required``, ``discouraged``: said in a note)."""


class AvailabilityRuleList(Page):
    items: list[AvailabilityRuleRead]


class ExchangeRateRead(ExchangeRate, frozen=True):
    """An exchange rate: the record ``ExchangeRate`` (``rate`` units of ``quote``, CNY, for one ``base``)."""


class ExchangeRateList(Page):
    items: list[ExchangeRateRead]


if TYPE_CHECKING:  # made from the record when the module is imported: to the type checker, a Struct
    AssumptionRead = msgspec.Struct
else:
    AssumptionRead = spelled_out(
        Assumption,
        "AssumptionRead",
        drop=("id",),  # named by option/key, as sources cite it (assumptions:<option>/<key>)
        doc="An assumption: the record ``Assumption``, its range as low, expected (the mean) and high beside its mode.",
    )


class AssumptionList(Page):
    items: list[AssumptionRead]


class ConditionRead(Condition, frozen=True):
    """A condition of a rule: the record ``Condition``."""


class RuleRead(Rule, frozen=True):
    """A rule: the record ``Rule``, its conditions as ``ConditionRead``."""

    conditions: tuple[ConditionRead, ...]


class RuleList(Page):
    items: list[RuleRead]


class KnowledgeVersionRead(msgspec.Struct):
    version: str
    content_hash: str
    created_at: dt.datetime
    note: str
    summary: dict[str, Any]
