"""The message catalogs: every code in every language, with the same placeholders — the service's own
and each plugin's; a plugin's words merged, never over the service's; language negotiation."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from app import i18n
from app.host.manager import create_option_host
from app.host.options import PluginError
from app.sdk import hookimpl

ROOT = Path(__file__).resolve().parent.parent
BUILTINS = ("self_built_cluster", "rented_gpu_instances", "ai_compute_platform")


def _complete(catalogs: dict[str, dict[str, str]], where: str) -> None:
    english = catalogs["en"]
    for lang in i18n.LANGUAGES:
        messages = catalogs[lang]
        assert set(messages) == set(english), f"{where} {lang}: codes differ from English"
        for code, template in messages.items():
            assert i18n.placeholders(template) == i18n.placeholders(english[code]), f"{where} {lang} {code}"
            assert template.strip(), f"{where} {lang} {code} is empty"


def test_every_code_in_every_language_with_the_same_placeholders() -> None:
    host = create_option_host()
    _complete({lang: i18n.catalog(lang) for lang in i18n.LANGUAGES}, "merged")
    for plugin in BUILTINS:
        assert set(host.messages[plugin]) == set(i18n.LANGUAGES), plugin
        _complete(host.messages[plugin], plugin)


def test_the_built_ins_words_are_their_own() -> None:
    """The built-in options' sentences live in plugins/locales/, not among the service's words; each
    option names itself there (``option.<key>.*``)."""
    host = create_option_host()
    service = tomllib.loads((ROOT / "app/i18n/locales/en.toml").read_text(encoding="utf-8"))
    for plugin in BUILTINS:
        words = host.messages[plugin]["en"]
        assert {f"option.{plugin}.{f}" for f in ("ref", "name", "description")} <= set(words)
        assert f"setup.{plugin}" in words
        assert plugin not in service.get("option", {}) and plugin not in service.get("setup", {})
        for code in words:
            assert i18n.catalog("zh")[code] == host.messages[plugin]["zh"][code]


class _Words:
    """A test plugin that ships ``answer`` as its words."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer

    @hookimpl
    def compute_advisor_messages(self) -> dict[str, Any]:
        return self.answer


def test_a_plugins_words_join_every_language() -> None:
    create_option_host(
        [_Words({"en": {"words_test": {"hello": "Hello {who}"}}, "zh": {"words_test.hello": "你好 {who}"}})]
    )
    assert i18n.translate("words_test.hello", "zh", who="x") == "你好 x"
    assert i18n.translate("words_test.hello", "en", who="x") == "Hello x"


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ({"en": {"reason": {"none": "nothing"}}}, "message 'reason.none' is one of the service's own"),
        ({"en": {"option.rented_gpu_instances.name": "x"}}, "worded by both rented_gpu_instances and"),
        ({"fr": {"x.y": "z"}}, "messages in fr"),
        ({"en": {"x.y": "{a}"}, "zh": {"x.y": "{b}"}}, "message 'x.y' has other placeholders in zh"),
        ({"zh": {"x.y": "z"}}, "message 'x.y' has no English template"),
        (["en"], "must return {language: catalog}"),
    ],
)
def test_a_plugin_may_not_override_or_garble_words(answer: Any, error: str) -> None:
    before = {lang: dict(i18n.catalog(lang)) for lang in i18n.LANGUAGES}
    with pytest.raises(PluginError) as caught:
        create_option_host([_Words(answer)])
    assert error in str(caught.value)
    if "worded by both" not in error:
        assert "test_i18n._Words" in str(caught.value)  # the plugin is named
    assert {lang: i18n.catalog(lang) for lang in i18n.LANGUAGES} == before  # nothing merged


def test_lookups_read_no_file() -> None:
    """After plugins load, a catalog is a dict held in memory: the same object on every lookup."""
    create_option_host()
    assert i18n.catalog("zh") is i18n.catalog("zh")


def test_translate_fills_parameters() -> None:
    assert i18n.translate("language.name", "zh") == "中文"
    assert i18n.translate("language.name") == "English"


@pytest.mark.parametrize(
    ("header", "lang"),
    [
        (None, "en"),
        ("", "en"),
        ("zh-CN", "zh"),
        ("zh-Hans-CN,zh;q=0.9,en;q=0.8", "zh"),
        ("en-US,en;q=0.9,zh-CN;q=0.8", "en"),
        ("fr-FR, zh;q=0.5", "zh"),
        ("de, fr", "en"),
        ("en;q=0.2, zh;q=0.9", "zh"),
        ("zh;q=0, en", "en"),
        ("*", "en"),
        ("zh;q=abc", "en"),
        # a quality value that is not RFC 9110's (0-1, at most three decimals): the header is ignored
        ("zh;q=1e400", "en"),
        ("en;q=0.5, zh;q=1e400", "en"),
        ("zh;q=inf", "en"),
        ("zh;q=nan", "en"),
        ("zh;q=1.5", "en"),
        ("zh;q=0.1234", "en"),
        ("zh;q=-1", "en"),
        ("zh;q=1.000", "zh"),
        ("en;q=0.001, zh;q=0.002", "zh"),
    ],
)
def test_negotiate_language(header: str | None, lang: str) -> None:
    assert i18n.negotiate_language(header) == lang


def test_english_is_rendered_from_the_english_catalog_names_included() -> None:
    """The core writes a name by key ("rented_gpu_instances", "on_demand"); every language, English
    too, reads it by name from the catalogs. A rule keeps the knowledge base's English words, and a code
    no catalog has keeps its own text."""
    from app.core.text import Msg, option_ref, plan_name

    create_option_host()
    assert str(option_ref("rented_gpu_instances:on_demand")) == "rented_gpu_instances (on demand)"
    assert i18n.render(option_ref("rented_gpu_instances:on_demand"), "en") == "Rented GPU instances (on demand)"
    assert i18n.render(option_ref("rented_gpu_instances:reserved_1y"), "zh") == "租用GPU实例（包年1年）"
    assert i18n.render(plan_name("capacity_block"), "en") == "Capacity Block"
    assert i18n.render(plan_name("a_plan_nobody_knows"), "en") == "a plan nobody knows"
    rule = Msg("rule.rented_infrequent_training", "An admin's own words.", {"profile_utilization": "0.1"})
    assert i18n.render(rule, "en") == "An admin's own words."
    assert i18n.render(Msg("provider.acme", "Acme Cloud", {}), "zh") == "Acme Cloud"


@pytest.mark.parametrize("family", ["plan", "provider", "server", "facility", "residency", "data_security", "basis"])
def test_every_name_family_is_worded_in_every_language(family: str) -> None:
    for lang in i18n.LANGUAGES:
        words = {c for c in i18n.catalog(lang) if c.startswith(f"{family}.")}
        assert words == {c for c in i18n.catalog("en") if c.startswith(f"{family}.")} and words, (family, lang)
