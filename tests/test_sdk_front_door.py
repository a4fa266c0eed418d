"""The plugin SDK v4's front door (``app.sdk``): a small surface with a version, the start-up refusal of a
plugin written for another SDK, the extension points declared once, and the assumptions each kernel
requires — declared on the class, read by nothing else, and checked against the seed files."""

from __future__ import annotations

import dataclasses
import datetime as dt
import inspect
import re
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import SEEDS
from seed_snapshot import knowledge_from_seeds

import app.sdk
from app.cli.common import check_required_assumptions, loaded_options
from app.core import kernel as kernel_module
from app.core.declarations import OptionSpec
from app.core.extensions import EXTENSION_POINTS
from app.core.kernel import Kernel
from app.core.offer_kernel import OfferKernel
from app.core.option import OptionPlugin
from app.core.types import Profile
from app.host.manager import PluginError, create_option_host
from app.kb.seeds import SeedError, read_seeds

ROOT = Path(__file__).resolve().parent.parent
CLASSES = {"OptionPlugin": OptionPlugin, "Kernel": Kernel, "OfferKernel": OfferKernel}


def test_the_front_door_is_small_versioned_and_holds_no_module() -> None:
    names = app.sdk.__all__
    assert len(names) <= 40, len(names)
    assert not [n for n in names if isinstance(getattr(app.sdk, n), types.ModuleType)]
    assert re.fullmatch(r"\d+\.\d+\.\d+", app.sdk.__version__)
    assert app.sdk.__version__.startswith("4.")


class _Option(OptionPlugin):
    spec = OptionSpec(key="ranged", name="ranged", description="an option with an SDK range", version="1.0")
    kernel = OfferKernel


@pytest.mark.parametrize(
    ("declared", "says"),
    [
        (">=5,<6", "plugin ranged_plugin is written for SDK >=5,<6; this service has SDK 4."),
        ("<4", "plugin ranged_plugin is written for SDK <4; this service has SDK 4."),
        ("four", "plugin ranged_plugin: its SDK range 'four' is not a version specifier"),
        (None, 'plugin ranged_plugin declares no SDK range: set sdk = ">=4,<5" on its OptionPlugin class'),
    ],
)
def test_a_plugin_for_another_sdk_is_refused_at_start(declared: str | None, says: str) -> None:
    namespace = {} if declared is None else {"sdk": declared}
    plugin = type("Ranged", (_Option,), namespace)()
    host = None
    with pytest.raises(PluginError) as refused:
        import pluggy

        from app.host import hookspecs
        from app.host.compatibility import check_sdk_ranges

        pm = pluggy.PluginManager(hookspecs.PROJECT)
        pm.add_hookspecs(hookspecs)
        pm.register(plugin, name="ranged_plugin")
        host = check_sdk_ranges(pm)
    assert host is None
    assert says in str(refused.value)


def test_a_plugin_within_its_range_loads() -> None:
    plugin = type("Ranged", (_Option,), {"sdk": ">=4,<5"})()
    assert "ranged" in create_option_host(extra_plugins=[plugin], entry_points=False).options


def test_the_builtins_declare_a_range_and_their_words_on_the_class() -> None:
    host = create_option_host()
    for name in ("self_built_cluster", "rented_gpu_instances", "ai_compute_platform"):
        plugin = host.pm.get_plugin(name)
        assert isinstance(plugin, OptionPlugin)
        assert plugin.sdk == ">=4,<5"
        assert set(plugin.messages) == {"en", "zh"}
        assert host.messages[name]["en"]  # the host read them through the class


def test_every_extension_point_is_on_its_class_with_a_docstring_or_comment() -> None:
    for point in EXTENSION_POINTS:
        cls = CLASSES[point.owner]
        found = inspect.getattr_static(cls, point.name, None)
        source = inspect.getsource(cls)
        if found is None:  # a declared attribute without a default: annotated on the class
            assert point.name in cls.__annotations__, point
            assert re.search(rf"#: .*\n(\s*#.*\n)*\s*{point.name}: ", source), point
        elif callable(found) or isinstance(found, (staticmethod, classmethod)):
            func = found.__func__ if isinstance(found, (staticmethod, classmethod)) else found
            assert inspect.getdoc(func), point
        else:
            assert re.search(rf"#: .*\n(\s*#.*\n)*\s*{point.name}(: [^=]+)? = ", inspect.getsource(cls)), point


def _overrides(cls: type) -> set[str]:
    """The names a plugin's class sets that a base class of the SDK has."""
    bases = [b for b in cls.__mro__[1:] if b in CLASSES.values() or b.__module__.startswith("app.core")]
    return {n for n in vars(cls) if not n.startswith("__") and any(n in vars(b) for b in bases)}


def test_the_plugins_override_only_declared_extension_points() -> None:
    declared = {p.name for p in EXTENSION_POINTS}
    host = create_option_host()
    for name in host.options:
        plugin = host.pm.get_plugin(name)
        for cls in (type(plugin), type(plugin).kernel):
            assert _overrides(cls) <= declared, (cls.__name__, sorted(_overrides(cls) - declared))


# ---- required assumptions --------------------------------------------------------------------------

#: assumptions read by the component, fabric or GPU of a row rather than by the option (documented where
#: they are read: ``OfferKernel.scaling``, ``bom.bill``)
PER_ROW = re.compile(r"^(multi_node_scaling|life_years|residual_decline|resale_share)_[a-z_]+$")


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, set[str]]]:
    """The assumptions each kernel class reads while it answers."""
    found: dict[str, set[str]] = {}
    original = kernel_module.Kernel._assumption

    def recorded(self: Kernel, key: str) -> object:
        found.setdefault(type(self).__name__, set()).add(key)
        return original(self, key)

    monkeypatch.setattr(kernel_module.Kernel, "_assumption", recorded)
    yield found


def _profiles() -> Iterator[Profile]:
    base = Profile(
        gpus=64,
        utilization=0.6,
        horizon_years=3,
        team_size=10,
        ops_team="basic",
        data_security="standard",
        start_within_days=30,
        as_of=dt.date(2025, 6, 1),
        currency="USD",
    )
    for gpu_model in (None, "h100_sxm", "a100_80gb"):
        for ops_team in ("none", "basic", "professional"):
            for preemptible in (0.0, 1.0):
                yield dataclasses.replace(base, gpu_model=gpu_model, ops_team=ops_team, preemptible_share=preemptible)


def test_each_builtin_kernel_reads_only_what_it_requires(reads: dict[str, set[str]]) -> None:
    host = create_option_host()
    kb = knowledge_from_seeds()
    kernels = {}
    for profile in _profiles():
        for option in host.options:
            kernel = host.kernel(option, kb, profile.currency, profile.as_of)
            kernels[type(kernel).__name__] = type(kernel)
            try:
                kernel.assess(profile)
            except Exception as exc:
                assert type(exc).__name__ == "NoOffer", exc
    assert set(reads) == set(kernels)
    for name, keys in reads.items():
        undeclared = {k for k in keys - set(kernels[name].required_assumptions()) if not PER_ROW.match(k)}
        assert not undeclared, f"{name} reads assumptions it does not require: {sorted(undeclared)}"


def test_required_assumptions_come_from_the_bases_then_the_class() -> None:
    host = create_option_host()
    rented = type(host.pm.get_plugin("rented_gpu_instances")).kernel
    required = rented.required_assumptions()
    assert required[: len(OfferKernel.requires)] == OfferKernel.requires
    assert set(rented.requires) <= set(required)
    assert len(set(required)) == len(required)


def test_seeds_check_refuses_seeds_lacking_a_required_assumption(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    for file in SEEDS.glob("*.yaml"):
        text = file.read_text(encoding="utf-8")
        # drop the one row of spot_reliable_gpus (the rented option requires it)
        text = re.sub(r"(?ms)^  - option: \w+\n    key: spot_reliable_gpus\n.*?(?=^  - |^\S|\Z)", "", text)
        (seeds / file.name).write_text(text, encoding="utf-8")
    seed_set = read_seeds(seeds)
    assert not [a for a in seed_set.records["assumptions"] if a.key == "spot_reliable_gpus"]
    with pytest.raises(SeedError) as refused:
        check_required_assumptions(seed_set, loaded_options())
    said = str(refused.value)
    assert "the plugin of option rented_gpu_instances requires the assumption spot_reliable_gpus" in said
    check_required_assumptions(read_seeds(SEEDS), loaded_options())  # the reference seeds have them all
