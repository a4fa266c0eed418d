"""The built-in option plugins: ordinary plugins of the entry-point group ``compute_advisor.options``.

Each ships its words as package data, ``plugins/locales/<option>.<lang>.toml``, and hands them to
the service through the ``compute_advisor_messages`` hook (docs/plugins.md, "Shipping messages").
"""

from __future__ import annotations

import tomllib
from importlib.resources import files
from typing import Any

from app.sdk import vocab


def messages(option: str) -> dict[str, dict[str, Any]]:
    """The catalogs of ``option`` by language, read from this package's ``locales/`` (once, at start-up)."""
    folder = files(__name__) / "locales"
    return {lang: tomllib.loads((folder / f"{option}.{lang}.toml").read_text("utf-8")) for lang in vocab.LANGUAGES}
