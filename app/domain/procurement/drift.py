"""Drift of a stored recommendation: its stored request priced again on the knowledge of now, beside its answer.

``drift`` reads the stored answer's figures (``response``) and evaluates the stored request (``request``) on the
knowledge the current context prices with (``Advisor.knowledge()``: in a request, its organisation's snapshot;
elsewhere, within ``Advisor.priced_with(book)``) through ``DecisionService.evaluate`` — the ranking a
recommendation answers, without its Monte Carlo confidence block (which ranks nothing). Both sides are read
the same way, from the answer's JSON:

- an option's cost is its ranking entry's ``cost.total_cost`` (low/expected/high over the horizon, in the
  request's currency); ``change`` is ``(now − stored) / stored`` of the expected figures, null where either
  side has none or the stored one is 0;
- a stored request without ``as_of`` is priced as of today (``advisor.today()``): prices valid on a later day
  and a new knowledge version both show; one that pinned ``as_of`` keeps it, so only knowledge changes show;
- an offer the stored answer priced for an option (its ``offer``; with a demand over time, its segments'
  offers) is *gone* when, now, the option has no figures (``unpriced``), was feasible and breaks a constraint
  (``infeasible``), or is priced with no offer of that identity (``replaced``). An offer's identity is its
  provider, region, subject, plan, variant, GPU model and GPUs per unit: a private quote that prices the same
  offer in place of the list's row moves its cost, it does not make it gone;
- ``changed``: the recommended option differs, an option's rank differs (or it is ranked on one side only),
  an option has figures on one side only, an option's ``|change|`` is at least ``CHANGE_TOLERANCE``, or an
  offer is gone. A new knowledge version that changes none of these is no change.

A stored request that no longer validates (a GPU model the knowledge base has dropped, a field removed
since) raises ``NotRepriceable`` naming why; a request that no option can price now is answered, every
option unpriced.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import msgspec
from pydantic import ValidationError

from app.core.errors import DomainError, KnowledgeUnavailable, NothingAssessable
from app.core.text import Msg, msg
from app.domain.decisions.service import DecisionService
from app.domain.procurement import drift_schemas as s
from app.domain.shared.demand import RecommendationCreate
from app.domain.shared.schemas import RangeRead
from app.i18n import LANGUAGES, Lang

__all__ = ["CHANGE_TOLERANCE", "NotRepriceable", "Stored", "drift", "event_worthy"]

#: the smallest ``|change|`` that makes a drift ``changed`` (0.05 %: above the answers' rounding)
CHANGE_TOLERANCE = 0.0005
#: decimals of ``change``
CHANGE_DECIMALS = 6
#: what makes two offers one (``OfferRead``'s fields)
IDENTITY = ("provider", "region", "subject", "plan", "variant", "gpu_model", "gpus_per_unit")


class StoredRecommendation(Protocol):
    """What drift reads of a stored recommendation (``app.kb.service_records.Recommendation``)."""

    @property
    def id(self) -> str: ...
    @property
    def knowledge_version(self) -> str: ...
    @property
    def request(self) -> dict[str, Any]: ...
    @property
    def response(self) -> dict[str, Any]: ...


@dataclasses.dataclass(frozen=True, slots=True)
class Stored:
    """A stored recommendation as drift reads it, held apart from the session that read it."""

    id: str
    knowledge_version: str
    request: dict[str, Any]
    response: dict[str, Any]


class NotRepriceable(Exception):
    """The stored request cannot be priced again: it no longer validates against the service or the
    knowledge base. ``detail`` says why (a message), ``field`` names the request's field when one is at fault."""

    def __init__(self, detail: Msg, field: str | None = None) -> None:
        super().__init__(str(detail))
        self.detail = detail
        self.field = field


class _Option(msgspec.Struct):
    rank: int | None
    feasible: bool | None
    total: RangeRead | None
    offers: list[dict[str, Any]]


class _Side(msgspec.Struct):
    knowledge_version: str
    recommended_option: str | None
    as_of: str | None
    options: dict[str, _Option]


def drift(decisions: DecisionService, row: StoredRecommendation, *, lang: Lang | None = None) -> s.DriftRead:
    """The stored recommendation ``row`` beside its request priced now (module docstring); ``lang``: the
    language the request is evaluated in (default: the stored answer's). Raises ``NotRepriceable``;
    ``KnowledgeUnavailable`` while no knowledge is loaded."""
    stored_doc = row.response
    answered = stored_doc.get("language")
    lang = lang or (answered if answered in LANGUAGES else "en")
    req = _request(row.request)
    try:
        evaluation = decisions.evaluate(req, insights=False, lang=lang)
    except NothingAssessable:
        now = _Side(knowledge_version=decisions.advisor.knowledge().version, recommended_option=None,
                    as_of=str(req.as_of or decisions.advisor.today()), options={})  # fmt: skip
    except KnowledgeUnavailable:
        raise
    except DomainError as exc:  # a reference the knowledge base has dropped, a demand it no longer takes
        raise _refused(exc) from exc
    else:
        now = _side(msgspec.to_builtins(evaluation))
    return _compare(row.id, _side(stored_doc, row.knowledge_version), now, currency=req.currency)


def event_worthy(d: s.DriftRead, min_cost_change: float, on_rank_change: bool) -> bool:
    """Whether a watch sends an event for drift ``d``: an option's ``|change|`` is at least ``min_cost_change``
    (a fraction; a change of 0 never counts), or ``on_rank_change`` and a rank or the recommended option
    changed, or an offer is gone."""
    if d.offers_gone:
        return True
    if on_rank_change and (d.rank_changes or d.stored.recommended_option != d.now.recommended_option):
        return True
    return any(
        c.change is not None and c.change != 0 and abs(c.change) >= min_cost_change for c in d.cost_changes.values()
    )


def _compare(rec_id: str, stored: _Side, now: _Side, *, currency: str) -> s.DriftRead:
    """The drift answer from its two sides."""
    names = list(dict.fromkeys([*stored.options, *now.options]))
    rank_changes = [
        s.RankChangeRead(option=o, stored_rank=a, now_rank=b)
        for o in names
        if (a := _rank(stored, o)) != (b := _rank(now, o))
    ]
    cost_changes = {o: _cost_change(_total(stored, o), _total(now, o)) for o in names}
    gone = [g for o in stored.options for g in _gone(o, stored.options[o], now.options.get(o))]
    priced_once = any((_total(stored, o) is None) != (_total(now, o) is None) for o in names)
    moved = any(c.change is not None and abs(c.change) >= CHANGE_TOLERANCE for c in cost_changes.values())
    changed = (
        stored.recommended_option != now.recommended_option or bool(rank_changes) or priced_once or moved or bool(gone)
    )
    return s.DriftRead(
        recommendation_id=rec_id,
        changed=changed,
        currency=currency,
        stored=_side_read(stored, names),
        now=_side_read(now, names),
        rank_changes=rank_changes,
        cost_changes=cost_changes,
        offers_gone=gone,
    )


# ---- reading an answer ---------------------------------------------------------------------------


def _request(stored: Mapping[str, Any]) -> RecommendationCreate:
    """The stored request as it was validated (its JSON form; dates as text), or ``NotRepriceable``."""
    try:
        return RecommendationCreate.model_validate_json(json.dumps(stored))
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or None
        why = f"{field}: {first['msg']}" if field else str(first["msg"])
        raise NotRepriceable(
            msg(
                "problem.detail.drift.invalid_request",
                f"the stored request no longer validates ({why}); store a new recommendation",
                why=why,
            ),
            field=field,
        ) from exc


def _refused(exc: DomainError) -> NotRepriceable:
    detail = exc.detail
    return NotRepriceable(
        msg(
            "problem.detail.drift.not_repriceable",
            f"the stored request cannot be priced on the knowledge of now: {detail}; store a new recommendation",
            why=detail,
        ),
        field=exc.field,
    )


def _side(doc: Mapping[str, Any], knowledge_version: str | None = None) -> _Side:
    """One side as read from an answer's JSON (stored, or an evaluation's ``to_builtins``)."""
    options: dict[str, _Option] = {}
    for entry in doc.get("ranking") or []:
        cost = entry.get("cost") or {}
        total = cost.get("total_cost")
        # a plain profile's offer; a demand's: its segments' (one offer may hold several)
        found = (
            [entry["offer"]]
            if entry.get("offer")
            else [g["offer"] for g in entry.get("segments") or [] if g.get("offer")]
        )
        offers = list({_identity(o): o for o in found}.values())
        options[entry["option"]] = _Option(
            rank=entry.get("rank"),
            feasible=entry.get("feasible"),
            total=None if total is None else msgspec.convert(total, RangeRead),
            offers=offers if total is not None else [],
        )
    as_of = (doc.get("profile") or {}).get("as_of")
    return _Side(
        knowledge_version=knowledge_version or str(doc.get("knowledge_version", "")),
        recommended_option=doc.get("recommended_option"),
        as_of=None if as_of is None else str(as_of),
        options=options,
    )


def _side_read(side: _Side, names: Iterable[str]) -> s.DriftSideRead:
    return s.DriftSideRead(
        knowledge_version=side.knowledge_version,
        recommended_option=side.recommended_option,
        costs={o: _total(side, o) for o in names},
        ranks={o: _rank(side, o) for o in names},
        as_of=None if side.as_of is None else dt.date.fromisoformat(side.as_of),
    )


def _rank(side: _Side, option: str) -> int | None:
    found = side.options.get(option)
    return None if found is None else found.rank


def _total(side: _Side, option: str) -> RangeRead | None:
    found = side.options.get(option)
    return None if found is None else found.total


def _cost_change(stored: RangeRead | None, now: RangeRead | None) -> s.CostChangeRead:
    a = None if stored is None else stored.expected
    b = None if now is None else now.expected
    change = None if a is None or b is None or a == 0 else round((b - a) / a, CHANGE_DECIMALS)
    return s.CostChangeRead(stored=a, now=b, change=change)


def _identity(offer: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(offer.get(f) for f in IDENTITY)


def _gone(option: str, stored: _Option, now: _Option | None) -> list[s.OfferGoneRead]:
    """The offers ``stored`` priced that price the option no more (``why``: module docstring)."""
    if not stored.offers:
        return []
    if now is None or now.total is None:
        return [_gone_read(option, o, "unpriced") for o in stored.offers]
    if stored.feasible and now.feasible is False:
        return [_gone_read(option, o, "infeasible") for o in stored.offers]
    kept = {_identity(o) for o in now.offers}
    instead = list(dict.fromkeys(str(o.get("name") or o.get("subject")) for o in now.offers))
    return [_gone_read(option, o, "replaced", instead) for o in stored.offers if _identity(o) not in kept]


def _gone_read(
    option: str, offer: Mapping[str, Any], why: s.GoneWhy, instead: list[str] | None = None
) -> s.OfferGoneRead:
    return s.OfferGoneRead(
        option=option,
        provider=offer["provider"],
        region=offer["region"],
        subject=offer["subject"],
        plan=offer["plan"],
        variant=offer.get("variant"),
        gpu_model=offer.get("gpu_model"),
        gpus_per_unit=offer["gpus_per_unit"],
        name=offer.get("name"),
        why=why,
        replaced_by=instead or [],
    )
