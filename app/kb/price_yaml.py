"""Price seeds written as the seed files write them: ``to_yaml`` gives the price sections of ``seeds/4*.yaml``
byte for byte (``tests/test_price_import.py``); ``app.kb.price_import`` makes the rows it writes."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import yaml

from app.kb.seeds import PriceSeed

#: what a price row says of its offer beyond its unit, price, period and source: capacity, lead time, size,
#: residency, interconnect, billing, power and longest term
OFFER_TERMS = (
    "capacity_gpus",
    "lead_time_days_low",
    "lead_time_days_high",
    "min_gpus",
    "residency",
    "interconnect",
    "billing",
    "min_kw",
    "max_term_days",
)
#: the field order of the seed files (``seeds/41-offers-hyperscalers.yaml``); a test keeps it equal to PriceSeed's
FIELD_ORDER = (
    "option",
    "provider",
    "item",
    "subject",
    "gpu_model",
    "plan",
    "unit",
    "gpus_per_unit",
    "low",
    "high",
    "expected",
    "currency",
    "region",
    "regions",
    "valid_from",
    "valid_to",
    *OFFER_TERMS,
    "source",
    "source_quality",
    "retrieved_on",
    "notes",
)
#: fields written only on the rows that state them (a short reservation's ``max_term_days``; the ``regions`` of
#: a price that holds in several)
WHEN_SET = ("max_term_days", "regions")
#: fields written as null where a row is not tied to one (stored as ``*``; the files write subject ``'*'``)
STARRED = ("gpu_model", "plan")


if TYPE_CHECKING:
    _SafeDumper = yaml.SafeDumper
else:  # libyaml's emitter where PyYAML has it: the same bytes, several times faster on a large catalog
    _SafeDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_SafeDumper):
    """PyYAML's safe dumper, with money written as the decimal it is (``55.04``, never a binary float)
    and every value written out in full (no ``&id001`` anchors for repeated dates)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _decimal(dumper: yaml.SafeDumper, value: Decimal) -> yaml.ScalarNode:
    text = format(value, "f")  # as quoted: 80 stays 80, 8.0 stays 8.0
    return dumper.represent_scalar("tag:yaml.org,2002:float" if "." in text else "tag:yaml.org,2002:int", text)


_Dumper.add_representer(Decimal, _decimal)


def to_yaml(prices: Sequence[PriceSeed], header: Sequence[str] = ()) -> str:
    """A seed file of ``prices``: comment lines, then ``prices:`` with every field in the seed files' order
    (a ``*`` GPU model or plan written as null), as ``yaml.safe_dump(…, sort_keys=False, allow_unicode=True,
    width=160)`` wrote the seed files — the price sections of ``seeds/4*.yaml`` come out byte for byte."""
    rows = [
        {
            f: None if f in STARRED and getattr(p, f) == "*" else getattr(p, f)
            for f in FIELD_ORDER
            if f not in WHEN_SET or getattr(p, f) is not None
        }
        for p in prices
    ]
    body = yaml.dump({"prices": rows}, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=160)
    return "".join(f"# {line}\n" for line in header) + body
