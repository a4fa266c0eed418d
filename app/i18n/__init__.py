"""Languages of the answers: ``Accept-Language`` negotiation and the message catalogs.

Every text a person reads in an answer — reasons, notes, chart labels, problem titles, spreadsheet
headers, the explorer page — is a message code with parameters, rendered from one catalog per
language: the service's own words (``app/i18n/locales/<lang>.toml``, flat dotted keys, ``str.format``
placeholders) merged with the words each loaded plugin ships (``compute_advisor_messages``; the
built-ins' are ``plugins/locales/<option>.<lang>.toml``). ``tests/test_i18n.py`` checks that every code,
the plugins' included, exists in every language with the same placeholders.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args

from litestar.types import Scope

from app.core.errors import PluginError
from app.core.text import Msg, flat_messages
from app.core.text import placeholders as placeholders  # re-exported: the catalogs' checks use it
from app.core.vocab import Language

Lang = Language
#: the languages answers come in, the default first
LANGUAGES: tuple[Lang, ...] = get_args(Lang)
DEFAULT_LANG: Lang = "en"
#: the ``Content-Language`` tag of each language
CONTENT_LANGUAGE: dict[Lang, str] = {"en": "en", "zh": "zh-CN"}
LOCALES = Path(__file__).parent / "locales"


def _service_catalogs() -> dict[Lang, dict[str, str]]:
    """The service's own words, one file per language."""
    found: dict[Lang, dict[str, str]] = {}
    for lang in LANGUAGES:
        with (LOCALES / f"{lang}.toml").open("rb") as f:
            found[lang] = flat_messages(tomllib.load(f))
    return found


#: the service's words (read on first use), the loaded plugins' (plugin → language → code → template)
#: and both merged: a lookup is one dict access, rebuilt only when plugins load
_service: dict[Lang, dict[str, str]] = {}
_plugins: dict[str, dict[Lang, dict[str, str]]] = {}
_merged: dict[Lang, dict[str, str]] = {}


def catalog(lang: Lang) -> dict[str, str]:
    """The messages of ``lang``: code → template, the service's and every loaded plugin's."""
    found = _merged.get(lang)
    if found is None:
        _merge(_plugins)
        found = _merged[lang]
    return found


def add_plugin_messages(messages: Mapping[str, Mapping[Lang, Mapping[str, str]]]) -> None:
    """Merge plugins' catalogs (``OptionHost.messages``: plugin → language → code → template) into
    every language's, when plugins load. A plugin loaded again replaces its own words. A plugin may
    not word a code of the service's, nor one another loaded plugin words: :class:`PluginError`, and
    nothing changes."""
    _merge({**_plugins, **{name: {lang: dict(c) for lang, c in m.items()} for name, m in messages.items()}})


def _merge(plugins: dict[str, dict[Lang, dict[str, str]]]) -> None:
    global _service, _plugins, _merged
    service = _service or _service_catalogs()
    owner: dict[str, str] = {}
    for name, catalogs in plugins.items():
        for code in {code for c in catalogs.values() for code in c}:
            if code in service[DEFAULT_LANG]:
                raise PluginError(f"plugin {name}: message '{code}' is one of the service's own")
            if owner.setdefault(code, name) != name:
                raise PluginError(f"message '{code}' is worded by both {owner[code]} and {name}")
    merged = {lang: dict(service[lang]) for lang in LANGUAGES}
    for catalogs in plugins.values():
        for lang, c in catalogs.items():
            merged[lang].update(c)
    _service, _plugins, _merged = service, plugins, merged


def translate(code: str, lang: Lang = DEFAULT_LANG, /, **params: Any) -> str:
    """The message ``code`` in ``lang`` with ``params`` filled in (English where ``lang`` lacks it)."""
    template = catalog(lang).get(code) or catalog(DEFAULT_LANG)[code]
    return template.format(**params) if params else template


#: an RFC 9110 quality value (§12.4.2): 0 to 1, at most three decimals — ``Accept`` and ``Accept-Language`` alike
QVALUE = re.compile(r"^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$")


def negotiate_language(accept_language: str | None) -> Lang:
    """The best of :data:`LANGUAGES` for an ``Accept-Language`` header (RFC 9110 §12.5.4); English by default.

    ``zh``, ``zh-CN``, ``zh-Hans``… choose Chinese; quality values order the ranges; ``*`` and
    unknown languages fall back to English. A header with a quality value that is not RFC 9110's
    (``q=1e400``, ``q=inf``, ``q=1.5``, ``q=abc``) is malformed and ignored as a whole: English.
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
                if not QVALUE.match(value.strip()):
                    return DEFAULT_LANG
                q = float(value)
        if tag and q > 0:
            ranked.append((-q, position, tag.strip().lower()))
    for _, _, tag in sorted(ranked):
        primary = tag.split("-", 1)[0]
        if primary in LANGUAGES:
            return primary
    return DEFAULT_LANG


# ---- rendering the core's messages in the request's language --------------------------------------

#: a plain sentence (a third-party plugin's note): shown as it is, in every language
VERBATIM = "text.verbatim"


#: messages whose English words are the knowledge base's, not the catalog's: a rule's ``reason`` as the
#: seeds (or an admin) wrote it
OWN_ENGLISH = ("rule.",)


#: where a message keeps its last rendering, with the catalog it was rendered from
SHOWN = "_shown"


def render(text: str, lang: Lang) -> str:
    """``text`` in ``lang``: a :class:`~app.core.text.Msg` from its catalog template, English included
    (nested messages rendered too: an option's, offer's, provider's or plan's name is the catalog's in
    every language); its own text where the catalog lacks its code (a rule an admin added, a
    third-party plugin's sentence) and, in English, for a rule (the knowledge base's words); a plain
    string as it is."""
    if not isinstance(text, Msg):
        return str(text)
    table = catalog(lang)
    # a message is rendered once per catalog (a language's, until plugins load again): the names and
    # labels a kernel compiles once are in every answer that cites their offers
    shown = text.__dict__.get(SHOWN)
    if shown is not None and shown[0] is table:
        found: str = shown[1]
        return found
    if (lang == DEFAULT_LANG and text.code.startswith(OWN_ENGLISH)) or (template := table.get(text.code)) is None:
        found = str(text)
    elif text.code.startswith("join."):
        found = template.join(render(item, lang) for item in text.params["items"])
    else:
        found = template.format(**{k: _param(v, lang) for k, v in text.params.items()})
    text.__dict__[SHOWN] = (table, found)
    return found


def _param(value: Any, lang: Lang) -> str:
    return render(value, lang) if isinstance(value, str) else str(value)


def code_of(text: str, lang: Lang) -> dict[str, Any]:
    """``{"code", "params"}`` of a sentence, for clients that render it themselves: parameters are
    strings in ``lang`` or nested ``{"code", "params"}``; a plain string is the code ``text.verbatim``."""
    if not isinstance(text, Msg):
        return {"code": VERBATIM, "params": {"text": str(text)}}
    if text.code.startswith("join."):
        return {"code": text.code, "params": {"items": [code_of(i, lang) for i in text.params["items"]]}}
    return {
        "code": text.code,
        "params": {k: code_of(v, lang) if isinstance(v, Msg) else str(v) for k, v in text.params.items()},
    }


def name_of(code: str, lang: Lang, default: str) -> str:
    """The catalog's ``code`` in ``lang``, else ``default`` (an option or rule the catalogs do not know)."""
    if lang == DEFAULT_LANG:
        return default
    return catalog(lang).get(code) or default


# ---- the request's language --------------------------------------------------------------------------


def language(scope: Scope) -> Lang:
    """The request's language (``Accept-Language``, negotiated once and kept in the scope's state)."""
    state = scope.setdefault("state", {})
    lang = state.get("language")
    if lang in LANGUAGES:
        return lang  # type: ignore[no-any-return]
    header = next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"accept-language"), None)
    lang = state["language"] = negotiate_language(header)
    return lang


def pin_language(scope: Scope, lang: Lang) -> None:
    """Answer in ``lang`` whatever was asked: a stored recommendation keeps the language it was answered in."""
    scope.setdefault("state", {})["language"] = lang
