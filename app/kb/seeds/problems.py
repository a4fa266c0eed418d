"""What is wrong with a seed record, in words and located: the file, the line its record starts on, the
section, the record and the field (a path into the record). ``SeedError`` carries every problem found;
a caller with no file (a price book sent over HTTP) gets the same problems with ``file`` and ``line``
left out. Validation errors of the seed models are turned into words here: what the value should
look like, with examples — never a regular expression, never pydantic's type names.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from pydantic import ValidationError

from app.core.entities import COUNTRY, KEY_40, KEY_60, KEY_OR_ANY
from app.core.vocab import PLAN_PATTERN

#: what a value matching each pattern of the records (``app.core.entities``) looks like, said to a person
PATTERN_WORDS: dict[str, str] = {
    KEY_40: "a key: 1 to 40 lower-case letters, digits or underscores, e.g. h100_sxm",
    KEY_60: "a key: 1 to 60 lower-case letters, digits or underscores, e.g. aws or alibaba_cloud",
    KEY_OR_ANY: "a key of 1 to 40 lower-case letters, digits or underscores (e.g. h100_sxm), or *",
    PLAN_PATTERN: (
        "a plan: a lower-case letter, then lower-case letters, digits or underscores, at most 24 characters, "
        "e.g. on_demand, spot, reserved_1y or capacity_block (null for a row sold on no plan)"
    ),
    COUNTRY: "a country code: two capital letters (ISO 3166-1), e.g. US or CN",
}
#: how many problems the text of a ``SeedError`` lists (``problems`` holds them all)
SHOWN = 10


@dataclass(frozen=True)
class SeedProblem:
    """One thing wrong with the seeds: ``message`` in words, and where, as far as it is known."""

    message: str
    file: str | None = None
    #: the line (1-based) the record starts on
    line: int | None = None
    section: str | None = None
    #: the record as a person finds it: ``#3 (aws/instance_hour/…)``
    record: str | None = None
    #: the path of the field in the record (``("conditions", 0, "field")``); empty for the whole record
    field: tuple[str | int, ...] = ()

    @property
    def field_name(self) -> str:
        """The field as messages name it: ``valid_from``, ``conditions.0.field``."""
        return ".".join(map(str, self.field))

    def __str__(self) -> str:
        text = f"{self.file}: " if self.file else ""
        if self.section:
            text += self.section + (f" {self.record}" if self.record else "") + ": "
        if self.field:
            text += f"field '{self.field_name}': "
        return text + self.message + (f" (line {self.line})" if self.line else "")


class SeedError(ValueError):
    """Seed files (or one price book) are invalid: ``problems`` names, for each, the file, the line, the
    record and the field; the text lists them (at most ``SHOWN``), separated by ``; ``."""

    def __init__(self, *problems: SeedProblem | str) -> None:
        self.problems = tuple(p if isinstance(p, SeedProblem) else SeedProblem(p) for p in problems)
        shown = [str(p) for p in self.problems[:SHOWN]]
        if len(self.problems) > SHOWN:
            shown.append(f"… and {len(self.problems) - SHOWN} more")
        super().__init__("; ".join(shown))

    def relocated(self, rename: Callable[[str], str]) -> SeedError:
        """The same problems with every file name passed through ``rename`` (in messages too)."""
        return SeedError(
            *(
                replace(p, file=None if p.file is None else rename(p.file), message=rename(p.message))
                for p in self.problems
            )
        )


class FieldProblem(ValueError):
    """A check of a whole record that blames one field (raised inside a model validator)."""

    def __init__(self, field: str, message: str) -> None:
        self.field, self.message = field, message
        super().__init__(f"field '{field}': {message}")


def shown(value: Any) -> str:
    """A value as a seed file spells it, for a message: ``'GBP'``, ``2026-12-05``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, dt.date):
        return value.isoformat()
    text = f"'{value}'" if isinstance(value, str) else str(value)
    return text if len(text) <= 80 else text[:77] + "…"


def _words(error: Any, fields: Iterable[str]) -> str:
    """One pydantic error in words; what is not translated here is pydantic's own sentence, which is words."""
    kind, ctx, value = error["type"], error.get("ctx") or {}, error.get("input")
    if kind == "missing":
        return "missing: every record of this section has it"
    if kind == "extra_forbidden":
        return f"unknown field; the fields of such a record are {', '.join(fields)}"
    if kind == "literal_error":
        return f"{shown(value)} is not one of {ctx.get('expected')}"
    if kind in ("string_pattern_mismatch",):
        described = PATTERN_WORDS.get(str(ctx.get("pattern")), "written another way (docs/price-books.md)")
        return f"{shown(value)} is not {described}"
    if kind.startswith("date") or kind.startswith("datetime"):
        why = f" ({ctx['error']})" if ctx.get("error") else ""
        return f"{shown(value)} is not a day of the calendar{why}: write a date as YYYY-MM-DD, e.g. 2026-12-05"
    if kind in ("decimal_parsing", "decimal_type", "float_parsing", "float_type", "finite_number"):
        return f"{shown(value)} is not a number: write it with a decimal point, e.g. 55.04"
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return f"{shown(value)} is not a whole number"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return "a record is a mapping of fields (one 'field: value' per line), not " + shown(value)
    if kind in ("list_type",):
        return f"{shown(value)} is not a list"
    if kind in ("string_type",):
        return f"{shown(value)} is not text"
    if kind in ("bool_type", "bool_parsing"):
        return f"{shown(value)} is not true or false"
    return str(error["msg"])


def validation_problems(exc: ValidationError, fields: Iterable[str], **where: Any) -> list[SeedProblem]:
    """The problems of one record's ``ValidationError`` (``fields``: the record's fields, to list when one
    is unknown; ``where``: the ``SeedProblem`` location fields — file, line, section, record)."""
    fields = list(fields)
    found = []
    for error in exc.errors():
        raised = (error.get("ctx") or {}).get("error")
        if isinstance(raised, FieldProblem):
            found.append(SeedProblem(raised.message, field=(*error["loc"], raised.field), **where))
            continue
        message = _words(error, fields) if error["type"] != "value_error" else str(error["msg"])
        found.append(SeedProblem(message.removeprefix("Value error, "), field=tuple(error["loc"]), **where))
    return found
