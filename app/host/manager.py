"""Where plugins are found and checked: the entry-point group, then ``check_pending``; their words
join the message catalogs."""

from __future__ import annotations

from collections.abc import Iterable

import pluggy

from app import i18n
from app.host import hookspecs
from app.host.compatibility import check_sdk_ranges
from app.host.options import LoadedOption, OptionHost, PluginError

__all__ = ["LoadedOption", "OptionHost", "PluginError", "create_option_host"]


def create_option_host(extra_plugins: Iterable[object] = (), *, entry_points: bool = True) -> OptionHost:
    """Load the plugins of the entry-point group (built-ins included) and validate their hooks.

    ``check_pending`` makes a misspelled hook name fail here, at start-up; so do a plugin's SDK range
    that excludes this SDK (``check_sdk_ranges``) and a plugin's message
    that clashes with the service's or another plugin's. The plugins' catalogs join the service's for
    the whole process (``i18n.add_plugin_messages``): whatever renders an answer finds their words.
    """
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    if entry_points:
        pm.load_setuptools_entrypoints(hookspecs.ENTRY_POINT_GROUP)
    for plugin in extra_plugins:
        pm.register(plugin, name=_name(pm, plugin))
    pm.check_pending()
    check_sdk_ranges(pm)
    host = OptionHost(pm)
    i18n.add_plugin_messages(host.messages)
    return host


def _name(pm: pluggy.PluginManager, plugin: object) -> str | None:
    """An option plugin given by hand is named as its entry point would name it, by its option's key,
    so its words are the same plugin's words in every host of the process; None (pluggy's own name)
    for another object, or where that name is taken."""
    spec = getattr(plugin, "spec", None)
    key = getattr(spec, "key", None)
    return key if isinstance(key, str) and pm.get_plugin(key) is None else None
