"""The loaded option plugins, each option bound to the one plugin that provides it; their kernels,
compiled once per knowledge snapshot × currency × ``as_of`` period and cached on the snapshot; the
message catalogs they ship; and the one typed call of each hook (pluggy returns ``Any``)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import pluggy

from app.core.columns import ALL
from app.core.declarations import OptionSpec, ProfileField
from app.core.errors import ISOLATED, InconsistentProfile, OptionFailed, PluginError, UnknownReference
from app.core.kernel import Kernel, Quote
from app.core.knowledge import Knowledge
from app.core.model import with_effective_cost
from app.core.text import flat_messages, msg, placeholders
from app.core.types import Assessment, Profile
from app.core.vocab import FIELD_KINDS, FIELD_NAME_PATTERN, LANGUAGES, Language

T = TypeVar("T")

#: the roles an option may declare in its spec, at most one option each
ROLES = ("owns_hardware", "bridges_lead_time")
#: what is told of a plugin's defect: the option, the profile, the knowledge and the exception
FailureReport = Callable[[str, Profile, Knowledge, Exception], None]


def _ignore(option: str, profile: Profile, knowledge: Knowledge, exc: Exception) -> None:
    """No one listens: a host built outside the service (tests, tools) raises ``OptionFailed`` alone."""


@dataclass(frozen=True, slots=True)
class LoadedOption:
    spec: OptionSpec
    plugin_name: str
    plugin_version: str
    caller: Any  # pluggy's subset hook caller of compute_advisor_assess for this plugin alone
    compiler: Any = None  # … of compute_advisor_compile
    #: the assumptions the option's kernel requires (``Kernel.required_assumptions``; none where its
    #: plugin declares no kernel class)
    requires: tuple[str, ...] = ()
    #: the SDK versions the plugin is written for (``OptionPlugin.sdk``), as it declares them
    sdk: str | None = None


class OptionHost:
    """The loaded options, each bound to the one plugin that provides it."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.pm = pm
        dist_versions = {pm.get_name(p): d.version for p, d in pm.list_plugin_distinfo()}
        options: dict[str, LoadedOption] = {}
        for impl in pm.hook.compute_advisor_options.get_hookimpls():
            specs = impl.function()
            if not isinstance(specs, list) or not all(isinstance(s, OptionSpec) for s in specs):
                raise PluginError(f"plugin {impl.plugin_name}: compute_advisor_options must return list[OptionSpec]")
            others = [p for p in pm.get_plugins() if p is not impl.plugin]
            caller = pm.subset_hook_caller("compute_advisor_assess", remove_plugins=others)
            compiler = pm.subset_hook_caller("compute_advisor_compile", remove_plugins=others)
            for spec in specs:
                if spec.key in options:
                    raise PluginError(
                        f"option '{spec.key}' is provided by both {options[spec.key].plugin_name} "
                        f"and {impl.plugin_name}"
                    )
                version = dist_versions.get(impl.plugin_name, spec.version)
                kernel = getattr(impl.plugin, "kernel", None)
                requires = (
                    kernel.required_assumptions() if isinstance(kernel, type) and issubclass(kernel, Kernel) else ()
                )
                sdk = getattr(impl.plugin, "sdk", None)
                options[spec.key] = LoadedOption(spec, impl.plugin_name, version, caller, compiler, requires, sdk)
        self.options: dict[str, LoadedOption] = dict(sorted(options.items()))
        self.roles: dict[str, str] = {}
        for role in ROLES:
            holders = [k for k, o in self.options.items() if getattr(o.spec, role)]
            if len(holders) > 1:
                raise PluginError(f"role '{role}' is declared by more than one option: {', '.join(holders)}")
            if holders:
                self.roles[role] = holders[0]
        #: each plugin's message catalogs (``compute_advisor_messages``): plugin → language → code → template
        self.messages: dict[str, dict[Language, dict[str, str]]] = plugin_messages(pm)
        #: the profile fields the options declare, by name (``OptionSpec.profile_fields``)
        self.profile_fields: dict[str, ProfileField] = profile_fields(self.options)
        #: told of each plugin defect, ``(option, profile, knowledge, exception)``, before ``OptionFailed``
        #: is raised: the composition root wires the log and the failure counter here
        self.on_failure: FailureReport = _ignore
        #: which options, of which plugins, this host loads: a kernel kept on a snapshot is this host's
        #: (its roles are answered by this host's options), never another's sharing the snapshot
        self.fingerprint = tuple((k, o.plugin_name, o.plugin_version, id(o.compiler)) for k, o in self.options.items())

    # ---- kernels ------------------------------------------------------------------------------------

    def kernel(self, option: str, knowledge: Knowledge, currency: str, as_of: dt.date) -> Kernel:
        """The option's kernel for ``knowledge``, ``currency`` and the period of ``as_of``: compiled on
        first use and kept on the snapshot (``Knowledge.derived``), so requests never compile again."""
        key = ("kernel", self.fingerprint, option, currency, knowledge.period(as_of))
        found: Kernel | None = knowledge.derived.get(key)
        if found is None:
            found = self._compile(option, knowledge, currency, as_of)
            knowledge.derived[key] = found
        return found

    def _compile(self, option: str, knowledge: Knowledge, currency: str, as_of: dt.date) -> Kernel:
        loaded = self.options[option]
        results = loaded.compiler(option=option, knowledge=knowledge, currency=currency, as_of=as_of, roles=self.role)
        found = [r for r in results if r is not None]
        if not found:  # an SDK v2 plugin: asked once per profile
            return AssessKernel(loaded, knowledge, currency, as_of, self.role)
        if len(found) != 1 or not isinstance(found[0], Kernel):
            raise PluginError(f"plugin for '{option}' compiled {len(found)} kernels instead of one")
        return found[0]

    def role(self, role: str, knowledge: Knowledge, currency: str, as_of: dt.date) -> Kernel | None:
        """The kernel of the option that declares ``role`` (``ROLES``), if one is loaded."""
        option = self.roles.get(role)
        return None if option is None else self.kernel(option, knowledge, currency, as_of)

    def owner(self) -> str | None:
        """The option that buys its hardware (its declared role), if one is loaded."""
        return self.roles.get("owns_hardware")

    # ---- profiles ------------------------------------------------------------------------------------

    def option_fields(self, given: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
        """The profile fields the options declare (``OptionSpec.profile_fields``): those ``given``, each
        checked against its declaration (422 naming ``option_fields.<name>``), and the others' defaults."""
        declared = self.profile_fields
        for name, value in given.items():
            field = declared.get(name)
            if field is None:
                known = ", ".join(declared) or "none"
                text = f"no option declares the profile field '{name}'; the options declare {known} (see /v1/options)"
                raise UnknownReference(
                    msg("problem.detail.unknown_option_field", text, name=name, known=known),
                    field=f"option_fields.{name}",
                )
            problem = field.refuses(value)
            if problem is not None:
                raise InconsistentProfile(
                    msg(
                        "problem.detail.bad_option_field",
                        f"the option field '{name}' {problem}",
                        name=name,
                        problem=problem,
                    ),
                    field=f"option_fields.{name}",
                )
        values = {name: given.get(name, f.default) for name, f in declared.items()}
        return tuple((name, value) for name, value in values.items() if value is not None)

    # ---- the calls ----------------------------------------------------------------------------------

    # failures are isolated here, for every caller: a gap in the knowledge base (``MissingKnowledge``,
    # ``NoOffer``) propagates as it is; anything else a plugin raises is a defect, told to ``on_failure``
    # and raised as ``OptionFailed``, which answers say only as ``option-failed``

    def assess(self, option: str, profile: Profile, knowledge: Knowledge) -> Assessment:
        """The option's assessment of ``profile``, materialised (what an answer shows)."""
        return self._isolated(option, profile, knowledge, lambda k: with_effective_cost(k.assess(profile)))

    def materialise(self, option: str, profile: Profile, knowledge: Knowledge, quote: Quote) -> Assessment:
        """The option's ``quote`` for ``profile`` — the one ``choose`` gave, at every end — materialised
        without choosing again: its offer, figures, sentences and the constraints it breaks, as ``assess``
        gives them for the same offer (no alternatives)."""
        return self._isolated(option, profile, knowledge, lambda k: with_effective_cost(k.materialise(profile, quote)))

    def choose(
        self, option: str, profile: Profile, knowledge: Knowledge, ends: tuple[int, ...] = ALL
    ) -> tuple[Quote, int]:
        """The option's cheapest feasible quote for ``profile`` (numbers only, at ``ends``) and the
        offers quoted."""
        return self._isolated(option, profile, knowledge, lambda k: k.choose(profile, ends))

    def _isolated(self, option: str, profile: Profile, knowledge: Knowledge, ask: Callable[[Kernel], T]) -> T:
        """``ask`` of the option's kernel for ``profile``, its failures isolated as said above."""
        try:
            return ask(self.kernel(option, knowledge, profile.currency, profile.as_of))
        except ISOLATED:
            raise
        except Exception as exc:
            self.on_failure(option, profile, knowledge, exc)
            raise OptionFailed(option) from exc


class AssessKernel(Kernel):
    """An SDK v2 plugin (``compute_advisor_assess`` only) as a kernel: asked once per profile, and
    per profile of a batch where it refuses arrays."""

    def __init__(self, loaded: LoadedOption, knowledge: Knowledge, currency: str, as_of: dt.date, roles: Any) -> None:
        super().__init__(loaded.spec, knowledge, currency, as_of, roles)
        self._caller = loaded.caller

    def assess(self, profile: Profile) -> Assessment:
        results = self._caller(option=self.option, profile=profile, knowledge=self.knowledge)
        found = [r for r in results if r is not None]
        if len(found) != 1 or not isinstance(found[0], Assessment):
            raise PluginError(f"plugin for '{self.option}' returned {len(found)} assessments instead of one")
        return with_effective_cost(found[0])

    def choose(self, profile: Profile, ends: tuple[int, ...] = ALL) -> tuple[Quote, int]:
        return quote_of(self.assess(profile)), 1

    def materialise(self, profile: Profile, quote: Quote) -> Assessment:
        """The assessment ``choose`` made its quote of (``quote_of`` keeps it), else the plugin's again."""
        return quote.detail if isinstance(quote.detail, Assessment) else self.assess(profile)


# ---- the fields and words the plugins declare -----------------------------------------------------


def profile_fields(options: Mapping[str, LoadedOption]) -> dict[str, ProfileField]:
    """Every profile field the options declare, checked: a name of the pattern, unique, not one of the
    service's own; a known kind; choices for strings and bounds for numbers only; a default it takes."""
    found: dict[str, ProfileField] = {}
    owner: dict[str, str] = {}
    own = {f.name for f in dataclasses.fields(Profile)}
    for key, loaded in options.items():
        for f in loaded.spec.profile_fields:
            where = f"option '{key}' (plugin {loaded.plugin_name}): profile field '{f.name}'"
            if not re.fullmatch(FIELD_NAME_PATTERN, f.name) or f.name in own:
                raise PluginError(f"{where}: a name is lower_snake_case, 40 characters at most, not a Profile field")
            if f.name in found:
                raise PluginError(f"profile field '{f.name}' is declared by both options {owner[f.name]} and {key}")
            if f.kind not in FIELD_KINDS:
                raise PluginError(f"{where}: kind '{f.kind}' is none of {', '.join(FIELD_KINDS)}")
            if f.choices and f.kind != "string":
                raise PluginError(f"{where}: only a string field has choices")
            numeric = f.kind in ("number", "integer")
            if (f.minimum is not None or f.maximum is not None) and not numeric:
                raise PluginError(f"{where}: only a number has bounds")
            if f.minimum is not None and f.maximum is not None and f.minimum > f.maximum:
                raise PluginError(f"{where}: its minimum is above its maximum")
            if f.default is not None and (problem := f.refuses(f.default)) is not None:
                raise PluginError(f"{where}: its default {f.default!r} {problem}")
            found[f.name], owner[f.name] = f, key
    return dict(sorted(found.items()))


# ---- the plugins' words ---------------------------------------------------------------------------


def plugin_label(pm: pluggy.PluginManager, plugin: object) -> str:
    """A plugin's name for people: its entry point's, else its module's or class's (pluggy names a
    plugin registered without a name by its ``id``)."""
    name = pm.get_name(plugin) or ""
    if name != str(id(plugin)):
        return name
    return getattr(plugin, "__name__", None) or f"{type(plugin).__module__}.{type(plugin).__qualname__}"


def plugin_messages(pm: pluggy.PluginManager) -> dict[str, dict[Language, dict[str, str]]]:
    """Every plugin's answer to ``compute_advisor_messages``, flattened and checked: known languages,
    the English placeholders in every language, no code worded by two plugins."""
    found: dict[str, dict[Language, dict[str, str]]] = {}
    owner: dict[str, str] = {}
    for impl in pm.hook.compute_advisor_messages.get_hookimpls():
        name = plugin_label(pm, impl.plugin)
        answer = impl.function()
        if not isinstance(answer, Mapping) or not all(isinstance(c, Mapping) for c in answer.values()):
            raise PluginError(f"plugin {name}: compute_advisor_messages must return {{language: catalog}}")
        unknown = sorted(set(answer) - set(LANGUAGES))
        if unknown:
            spoken = ", ".join(LANGUAGES)
            raise PluginError(f"plugin {name}: messages in {', '.join(unknown)}; the service speaks {spoken}")
        catalogs = {lang: flat_messages(answer[lang]) for lang in LANGUAGES if lang in answer}
        english = catalogs.get("en", {})
        for lang, catalog in catalogs.items():
            for code, template in catalog.items():
                if code not in english:
                    raise PluginError(f"plugin {name}: message '{code}' has no English template")
                if placeholders(template) != placeholders(english[code]):
                    raise PluginError(f"plugin {name}: message '{code}' has other placeholders in {lang} than in en")
        for code in english:
            if owner.setdefault(code, name) != name:
                raise PluginError(f"message '{code}' is worded by both {owner[code]} and {name}")
        found[name] = catalogs
    return found


def quote_of(a: Assessment) -> Quote:
    """An assessment's numbers as a quote (for an SDK v2 plugin's answers in batches and draws)."""
    violations = tuple(("verbatim", v.violated) for v in a.violations)
    return Quote.of_cost(
        None,
        dataclasses.replace(a.cost, breakdown=()),
        a.efficiency,
        a.stability,
        a.usability,
        tuple(
            (li.key, li.annual, li.upfront, li.total if li.total is not None else li.annual) for li in a.cost.breakdown
        ),
        (),
        violations,
        a,
    )


__all__ = [
    "ROLES",
    "AssessKernel",
    "LoadedOption",
    "OptionHost",
    "PluginError",
    "flat_messages",
    "placeholders",
    "plugin_label",
    "plugin_messages",
    "quote_of",
]
