"""The message catalogs: every code in every language, with the same placeholders; language negotiation."""

from __future__ import annotations

import pytest

from app import i18n


def test_every_code_in_every_language_with_the_same_placeholders() -> None:
    english = i18n.catalog("en")
    for lang in i18n.LANGUAGES:
        messages = i18n.catalog(lang)
        assert set(messages) == set(english), f"{lang}: codes differ from English"
        for code, template in messages.items():
            assert i18n.placeholders(template) == i18n.placeholders(english[code]), f"{lang} {code}"
            assert template.strip(), f"{lang} {code} is empty"


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
    ],
)
def test_negotiate_language(header: str | None, lang: str) -> None:
    assert i18n.negotiate_language(header) == lang
