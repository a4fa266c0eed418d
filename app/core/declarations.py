"""What a plugin declares about its option (SDK v4): the option itself (``OptionSpec``: its key, names,
roles, plans, billings and price-sheet formats) and the profile fields it reads beyond the service's own
(``ProfileField``), which requests send in ``option_fields`` and the service checks before any kernel
reads them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.core.vocab import FieldKind


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfileField:
    """A profile field an option declares (``OptionSpec.profile_fields``): requests that price or rank
    options send it in ``option_fields`` (the API document lists it there with these bounds), the
    service checks it against this declaration (422 naming ``option_fields.<name>``), and the option's
    kernel reads it with ``Profile.option(name)`` — a plain value, the same for a batch's group."""

    #: lower_snake_case (``vocab.FIELD_NAME_PATTERN``), unique among the loaded options, not a field of
    #: ``Profile`` itself
    name: str
    description: str
    kind: FieldKind
    #: the value when a request gives none (None: no value; the kernel reads None)
    default: float | int | str | bool | None = None
    #: bounds of a number (inclusive)
    minimum: float | None = None
    maximum: float | None = None
    #: the values a string may take (empty: any string of up to 64 characters)
    choices: tuple[str, ...] = ()

    def refuses(self, value: Any) -> str | None:
        """Why ``value`` is not one this field takes, or None."""
        if self.kind == "boolean":
            return None if isinstance(value, bool) else "must be true or false"
        if self.kind == "string":
            if not isinstance(value, str):
                return "must be a string"
            if self.choices and value not in self.choices:
                return f"must be one of {', '.join(self.choices)}"
            return None if len(value) <= 64 else "must be at most 64 characters"
        integral = isinstance(value, int) and not isinstance(value, bool)
        if self.kind == "integer" and not integral:
            return "must be a whole number"
        if not (integral or (isinstance(value, float) and value == value and abs(value) != float("inf"))):
            return "must be a number"
        if self.minimum is not None and value < self.minimum:
            return f"must be at least {self.minimum:g}"
        if self.maximum is not None and value > self.maximum:
            return f"must be at most {self.maximum:g}"
        return None


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """What a plugin says about the option it provides."""

    key: str
    name: str
    description: str
    version: str
    #: the option buys its hardware: break-even reports the cluster size from which it is the
    #: cheapest, and its payback against the other options
    owns_hardware: bool = False
    #: the plans (``rental_plan`` values) the option prices differently; break-even compares each
    plans: tuple[str, ...] = ()
    #: the plans the option sells: its price rows may carry these (or ``*``, no plan), and ``seeds
    #: check`` / ``seeds load`` / ``prices import`` refuse a row of the option with another; None (a
    #: plugin that declares nothing): any plan
    price_plans: tuple[str, ...] | None = None
    #: the plans a profile's ``rental_plan`` may name to narrow this option to one plan (a subset of
    #: ``price_plans``); a ``rental_plan`` no loaded option declares is refused with 422
    rental_plans: tuple[str, ...] = ()
    #: the option rents capacity on demand while another's is procured: an option that owns hardware
    #: bridges its lead time on it (its kernel answers ``bridge(at)``); one option at most
    bridges_lead_time: bool = False
    #: the fields of a profile this option reads beyond the service's own (``ProfileField``)
    profile_fields: tuple[ProfileField, ...] = ()
    #: how the option's price rows may bill (``billing``: ``job_seconds``, ``held_cluster``, ``pooled``); empty:
    #: its rows say nothing of it, and ``seeds check`` / ``seeds load`` / ``prices import`` / a private price
    #: book refuse a row of the option that does
    billings: tuple[str, ...] = ()
    #: the price-sheet formats of ``prices import`` whose every row is an offer of this option (``skypilot``: a
    #: cloud's catalog of rented VM instances); the importer files such a sheet's rows under the one loaded
    #: option that declares its format, unless ``--option`` names another
    price_formats: tuple[str, ...] = ()
