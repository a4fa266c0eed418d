"""What a plugin's own tests need to price its option without a server or a database.

``knowledge`` reads seed files as ``compute-advisor seeds check`` reads them and builds the snapshot the
service builds once they are loaded; ``assess`` prices one profile with the plugins given, as the
service does, through the service's own plugin host (``app.host``).
The built-in options are plugins too (``plugins.rented_gpu_instances.plugin``…): pass them to price
yours beside them. A plugin's test::

    import datetime as dt
    from pathlib import Path

    from app.sdk.testing import assess, knowledge
    from spot_option import plugin

    def test_a_team_of_eight_gets_a_spot_offer() -> None:
        kb = knowledge(Path(__file__).parent / "seeds", as_of=dt.date(2026, 6, 1))
        found = assess(kb, {"gpus": 8, "utilization": 0.5, "horizon_years": 1, "preemptible_share": 1}, plugin)
        spot = found["spot_instances"]
        assert not spot.violations and spot.offer is not None and spot.offer.plan == "spot"
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from app.core.knowledge import Knowledge
from app.core.option import OptionPlugin
from app.core.types import Assessment, Profile
from app.host.manager import OptionHost, create_option_host
from app.kb.seeds import SeedError, read_seeds
from app.kb.snapshot import assemble

__all__ = ["SeedError", "assess", "knowledge"]

#: the version a snapshot built from seed files carries (the service's is a digest of what it loaded)
VERSION = "kv-seeds"


def knowledge(seeds: Path | str, *, as_of: dt.date | None = None) -> Knowledge:
    """The knowledge snapshot of the seed files at ``seeds``, as the service builds it once they are loaded.

    ``seeds``: a directory of ``*.yaml`` files (the reference seeds and the plugin's own, copied into
    one), or one file; every record is validated and the references between them checked, as ``seeds
    check`` does: a ``SeedError`` lists every problem with its file, line, record and field.
    ``as_of``: the day the snapshot is taken, its ``created_at`` (midnight UTC; default: today). The day
    a profile is priced on is the profile's own ``as_of``. Row ids are each record's place in its section.
    """
    records = read_seeds(Path(seeds)).records
    rows = {
        section: [SimpleNamespace(id=i, **record.model_dump()) for i, record in enumerate(items, start=1)]
        for section, items in records.items()
    }
    day = as_of or dt.datetime.now(dt.UTC).date()
    return assemble(VERSION, dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC), **rows)


def assess(knowledge: Knowledge, fields: Mapping[str, Any], *plugins: OptionPlugin) -> dict[str, Assessment]:
    """Every option of ``plugins`` assessed for one profile, by option key, as the service answers it
    before words are rendered (``Assessment``: the chosen offer, its cost, violations and notes).

    ``fields``: the profile's fields by name, as a request gives them (``gpus``, ``utilization``,
    ``horizon_years``, …; ``as_of`` a date or ISO text, default the snapshot's day; ``option_fields``
    the options' fields, checked against their declarations and the others' defaults added).
    ``plugins``: the option plugins to assess, loaded into the service's own host (their SDK ranges
    checked, their kernels compiled, a role answered by the one given that declares it). As in the
    service, ``NoOffer`` and ``MissingKnowledge`` propagate as they are, and any other exception of a
    plugin is raised as ``OptionFailed`` with the plugin's exception as its ``__cause__``.
    """
    host = create_option_host(plugins, entry_points=False)
    profile = _profile(host, knowledge, fields)
    return {option: host.assess(option, profile, knowledge) for option in host.options}


def _profile(host: OptionHost, knowledge: Knowledge, fields: Mapping[str, Any]) -> Profile:
    """The core's profile of plain ``fields``: providers and regions as sorted sets, the options' fields
    as the host checks them (``OptionHost.option_fields``)."""
    given = dict(fields)
    chosen = host.option_fields(given.pop("option_fields", None) or {})
    for name in ("providers", "regions"):
        if given.get(name) is not None:
            given[name] = tuple(sorted(set(given[name])))
    if isinstance(given.get("as_of"), str):
        given["as_of"] = dt.date.fromisoformat(given["as_of"])
    return Profile(**{"as_of": knowledge.created_at.date(), **given}, option_fields=chosen)
