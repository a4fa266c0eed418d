"""Languages of the answers: ``Accept-Language`` negotiation and the message catalogs.

Every text a person reads in an answer — reasons, notes, chart labels, problem titles, spreadsheet
headers, the explorer page — is a message code with parameters, rendered from one catalog per
language (``app/lib/locales/<lang>.toml``, flat dotted keys, ``str.format`` placeholders).
``tests/test_i18n.py`` checks that every code exists in every language with the same placeholders.
"""

from __future__ import annotations

import string
import tomllib
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, Literal, get_args

Lang = Literal["en", "zh"]
#: the languages answers come in, the default first
LANGUAGES: tuple[Lang, ...] = get_args(Lang)
DEFAULT_LANG: Lang = "en"
#: the ``Content-Language`` tag of each language
CONTENT_LANGUAGE: dict[Lang, str] = {"en": "en", "zh": "zh-CN"}
LOCALES = Path(__file__).parent / "locales"


def _flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, f"{name}."))
        else:
            out[name] = str(value)
    return out


@cache
def catalog(lang: Lang) -> dict[str, str]:
    """The messages of ``lang``: code → template."""
    with (LOCALES / f"{lang}.toml").open("rb") as f:
        return _flatten(tomllib.load(f))


def placeholders(template: str) -> frozenset[str]:
    """The ``{name}`` fields a template uses."""
    return frozenset(field for _, field, _, _ in string.Formatter().parse(template) if field)


def translate(code: str, lang: Lang = DEFAULT_LANG, /, **params: Any) -> str:
    """The message ``code`` in ``lang`` with ``params`` filled in (English where ``lang`` lacks it)."""
    template = catalog(lang).get(code) or catalog(DEFAULT_LANG)[code]
    return template.format(**params) if params else template


def negotiate_language(accept_language: str | None) -> Lang:
    """The best of :data:`LANGUAGES` for an ``Accept-Language`` header (RFC 9110 §12.5.4); English by default.

    ``zh``, ``zh-CN``, ``zh-Hans``… choose Chinese; quality values order the ranges; ``*`` and
    unknown languages fall back to English.
    """
    if not accept_language:
        return DEFAULT_LANG
    ranked: list[tuple[float, int, str]] = []
    for position, part in enumerate(accept_language.split(",")):
        tag, _, rest = part.strip().partition(";")
        q = 1.0
        for param in rest.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if tag and q > 0:
            ranked.append((-q, position, tag.strip().lower()))
    for _, _, tag in sorted(ranked):
        primary = tag.split("-", 1)[0]
        if primary in LANGUAGES:
            return primary
    return DEFAULT_LANG
