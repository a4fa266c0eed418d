"""Whether a loaded plugin is written for this SDK: its declared range (``OptionPlugin.sdk``, or a
module's ``sdk``) must contain ``app.sdk.__version__``; a plugin without one, or outside it, stops the
service at start with a message that names the plugin, its range and the SDK's version."""

from __future__ import annotations

import logging

import pluggy
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from app.core.errors import PluginError
from app.core.version import SDK_VERSION

__all__ = ["SDK_VERSION", "check_sdk_ranges"]

log = logging.getLogger("compute_advisor.plugins")

#: the range a plugin written for this SDK declares (in the messages that say what to write)
SUPPORTED = f">={Version(SDK_VERSION).major},<{Version(SDK_VERSION).major + 1}"


def check_sdk_ranges(pm: pluggy.PluginManager) -> None:
    """Refuse every option plugin (one that implements ``compute_advisor_options``) whose SDK range is
    missing, malformed or excludes this SDK; warn once about a plugin that answers through the
    deprecated ``compute_advisor_assess`` hook (SDK v2), which SDK 5 removes."""
    version = Version(SDK_VERSION)
    for impl in pm.hook.compute_advisor_options.get_hookimpls():
        name = impl.plugin_name
        declared = getattr(impl.plugin, "sdk", None)
        if not isinstance(declared, str):
            raise PluginError(
                f'plugin {name} declares no SDK range: set sdk = "{SUPPORTED}" on its OptionPlugin class '
                f"(or at its module's top level) once it is written for SDK {SDK_VERSION}"
            )
        try:
            accepted = SpecifierSet(declared)
        except InvalidSpecifier:
            raise PluginError(f"plugin {name}: its SDK range {declared!r} is not a version specifier") from None
        if not accepted.contains(version, prereleases=True):
            raise PluginError(
                f"plugin {name} is written for SDK {declared}; this service has SDK {SDK_VERSION}: "
                "install a release of the plugin for it"
            )
    for impl in pm.hook.compute_advisor_assess.get_hookimpls():
        log.warning(
            "plugin %s answers through compute_advisor_assess (SDK v2), deprecated in SDK 4 and removed in "
            "SDK 5: compile a kernel instead (docs/plugins.md)",
            impl.plugin_name,
        )
