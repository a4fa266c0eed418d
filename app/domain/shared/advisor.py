"""The decision advisor the features share: the knowledge snapshot being served, the loaded option
plugins, today's date, and the step from a request to the core's profile and assessments."""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from operator import attrgetter
from typing import Any

import numpy as np
from opentelemetry.trace import NoOpTracer, Tracer

from app.core.errors import (
    InconsistentProfile,
    KnowledgeUnavailable,
    NothingAssessable,
    UnknownReference,
)
from app.core.knowledge import ANY, Knowledge
from app.core.text import msg
from app.core.types import Profile
from app.domain.shared.schemas import ProfileCreate, ProfileFields
from app.engine import decision, throughput
from app.engine.insights import Crossing, Variant, crossing
from app.host.options import LoadedOption, OptionHost
from app.kb.books import Book, Books
from app.web import metrics

log = logging.getLogger(__name__)
#: the private price book of the request's organisation: set once per request after authentication
#: (``app.asgi``), read by ``Advisor.loaded``; the worker pool's threads run in a copy of the context
BOOK: ContextVar[Book | None] = ContextVar("price_book", default=None)
#: the core profile's fields (``app.core.types.Profile``), each a request field of the same name
PROFILE_FIELDS = tuple(f.name for f in dataclasses.fields(Profile))
#: those the advisor derives from the request rather than copies (a default date, sorted sets, the options'
#: fields with their defaults)
DERIVED = frozenset({"as_of", "providers", "regions", "option_fields"})
#: the profile's fields copied from the request as they are, and their getter
COPIED = tuple(f for f in PROFILE_FIELDS if f not in DERIVED)
copied = attrgetter(*COPIED)


def report_failure(option: str, profile: Profile, knowledge: Knowledge, exc: Exception) -> None:
    """A plugin's defect, logged with its traceback (and the request id) and counted in
    ``compute_advisor_option_failures_total`` (``OptionHost.on_failure``). A batch's array attempt is not:
    the array contract lets a plugin refuse arrays, and the batch then asks it once per profile."""
    if isinstance(profile.gpus, np.ndarray):
        return
    log.error(
        "option %s failed: %s",
        option,
        type(exc).__name__,
        exc_info=exc,
        extra={"fields": {"option": option, "knowledge_version": knowledge.version}},
    )
    metrics.option_failed(option)


def utc_today() -> dt.date:
    return dt.datetime.now(dt.UTC).date()


class Advisor:
    """Knowledge, plugins and clock, and what every decision feature does with them first; and the
    tracer the features make their spans with (a no-op one while tracing is off)."""

    def __init__(
        self,
        host: OptionHost,
        knowledge: Callable[[], Knowledge | None],
        today: Callable[[], dt.date] = utc_today,
        tracer: Tracer | None = None,
        books: Books | None = None,
    ) -> None:
        self.host = host
        self._knowledge = knowledge
        #: the organisations' private price books (``app.kb.books``); None: every answer is priced on the list
        self.books = books
        self._today = today
        self.tracer = tracer or NoOpTracer()
        #: the options' calls, failures isolated by the host (``OptionHost.assess``, ``OptionHost.choose``,
        #: ``OptionHost.materialise``)
        self.assess = host.assess
        self.choose = host.choose
        self.materialise = host.materialise

    @property
    def options(self) -> Mapping[str, LoadedOption]:
        """The loaded options by key, in key order."""
        return self.host.options

    def today(self) -> dt.date:
        """The default ``as_of``: today in UTC (injectable for tests)."""
        return self._today()

    def loaded(self) -> Knowledge | None:
        """The snapshot in memory, if any, as the request's organisation sees it (its private book in place)."""
        kb = self._knowledge()
        book = BOOK.get()
        if kb is None or book is None or self.books is None:
            return kb
        return self.books.knowledge(kb, book)

    def list_knowledge(self) -> Knowledge:
        """The snapshot as every caller shares it: the list's prices, no organisation's book (the catalog)."""
        return self._require(self._knowledge())

    @staticmethod
    @contextmanager
    def priced_with(book: Book | None) -> Iterator[None]:
        """Within the block, answers are priced on ``book`` (None: on the list), whoever asks."""
        token = BOOK.set(book)
        try:
            yield
        finally:
            BOOK.reset(token)

    def knowledge(self) -> Knowledge:
        return self._require(self.loaded())

    @staticmethod
    def _require(kb: Knowledge | None) -> Knowledge:
        if kb is None:
            raise KnowledgeUnavailable("no knowledge version is loaded yet: run `compute-advisor seeds load`")
        return kb

    def check_references(
        self,
        kb: Knowledge,
        *,
        currency: str,
        gpu_model: str | None,
        providers: list[str] | None = None,
        regions: list[str] | None = None,
        buyer_country: str | None = None,
        rental_plan: str | None = None,
        precision: str | None = None,
    ) -> None:
        """422 for a currency that cannot be converted to, an unknown GPU model, a precision the GPU model
        has no dense peak at, an unknown provider or region, or a plan no loaded option sells, naming the
        field and where to find what exists."""
        if currency not in kb.currencies:
            available = ", ".join(sorted(kb.currencies))
            raise UnknownReference(
                msg(
                    "problem.detail.no_rates",
                    f"no exchange rates for {currency}; answers can be in {available} (see /v1/exchange-rates)",
                    currency=currency,
                    available=available,
                ),
                field="currency",
            )
        if gpu_model is not None and gpu_model not in kb.gpus:
            text = f"unknown GPU model '{gpu_model}' (see /v1/gpus)"
            raise UnknownReference(
                msg("problem.detail.unknown_gpu_model", text, gpu_model=gpu_model), field="gpu_model"
            )
        if gpu_model is not None and precision is not None and not throughput.supports(kb, gpu_model, precision):
            name, at = kb.gpus[gpu_model].name, precision.upper()
            known = ", ".join(p.upper() for p in throughput.PRECISIONS if throughput.supports(kb, gpu_model, p))
            text = f"the {name} has no dense {at} peak in the knowledge base: it trains at {known} (see /v1/gpus)"
            raise UnknownReference(
                msg("problem.detail.precision_unsupported", text, gpu_model=name, precision=at, known=known),
                field="precision",
            )
        unknown = ", ".join(sorted(set(providers) - set(kb.providers))) if providers else ""
        if unknown:
            text = f"unknown provider(s) {unknown} (see /v1/providers and /v1/offers)"
            raise UnknownReference(msg("problem.detail.unknown_providers", text, providers=unknown), field="providers")
        unknown = ", ".join(sorted(set(regions) - set(kb.regions) - {ANY})) if regions else ""
        if unknown:
            text = f"unknown region(s) {unknown} (see /v1/regions)"
            raise UnknownReference(msg("problem.detail.unknown_regions", text, regions=unknown), field="regions")
        if buyer_country is not None and buyer_country not in kb.countries:
            known = ", ".join(sorted(kb.countries))
            text = f"unknown buyer country '{buyer_country}'; the knowledge base knows {known} (see /v1/regions)"
            raise UnknownReference(
                msg("problem.detail.unknown_buyer_country", text, buyer_country=buyer_country, known=known),
                field="buyer_country",
            )
        if rental_plan is not None and rental_plan not in (plans := self.rental_plans()):
            known = ", ".join(plans)
            text = f"no option rents on plan '{rental_plan}'; the options' plans are {known} (see /v1/options)"
            raise UnknownReference(
                msg("problem.detail.unknown_rental_plan", text, rental_plan=rental_plan, known=known),
                field="rental_plan",
            )

    def rental_plans(self) -> tuple[str, ...]:
        """Every plan a request's ``rental_plan`` may name: those the loaded options declare, in their order."""
        return tuple(dict.fromkeys(p for o in self.options.values() for p in o.spec.rental_plans))

    def profile(self, req: ProfileFields, kb: Knowledge) -> Profile:
        """The core's profile of a comparison or recommendation request (``as_of`` defaulting to today):
        the same fields and defaults on every endpoint."""
        return self.profiles([req], kb)[0]

    def profiles(self, reqs: Sequence[ProfileFields], kb: Knowledge) -> list[Profile]:
        """The core's profile of each request (a batch's profiles), each checked as one alone is, in order:
        the first refusal is raised. What profiles share is worked out once per distinct value — the
        checks of their references with their sorted provider and region sets, the options' fields, today's
        date — since a batch of 10,000 profiles usually names a handful of them (10,000 profiles in
        process: 65 → 52 ms, most of the rest making the frozen ``Profile``s)."""
        today: dt.date | None = None
        references: dict[tuple[Any, ...], tuple[tuple[str, ...] | None, tuple[str, ...] | None]] = {}
        declared: dict[tuple[Any, ...], tuple[tuple[str, Any], ...]] = {}
        made: list[Profile] = []
        for req in reqs:
            providers, regions = req.providers, req.regions
            key = (
                req.currency,
                req.gpu_model,
                None if providers is None else tuple(providers),
                None if regions is None else tuple(regions),
                req.buyer_country,
                req.rental_plan,
                req.precision,
            )
            sets = references.get(key)
            if sets is None:
                self.check_references(
                    kb,
                    currency=req.currency,
                    gpu_model=req.gpu_model,
                    providers=providers,
                    regions=regions,
                    buyer_country=req.buyer_country,
                    rental_plan=req.rental_plan,
                    precision=req.precision,
                )
                sets = references[key] = (
                    None if providers is None else tuple(sorted(set(providers))),
                    None if regions is None else tuple(sorted(set(regions))),
                )
            if req.largest_job_gpus is not None and req.largest_job_gpus > req.gpus:
                raise InconsistentProfile(
                    f"largest_job_gpus {req.largest_job_gpus} is more than gpus {req.gpus}: the largest job runs "
                    "on at most every GPU the team needs",
                    field="largest_job_gpus",
                )
            given = req.option_fields or {}
            # by type too: True == 1 == 1.0, but a field declared an integer refuses true
            fields_key = tuple((name, type(value), value) for name, value in given.items()) if given else ()
            fields = declared.get(fields_key)
            if fields is None:
                fields = declared[fields_key] = self.host.option_fields(given)
            as_of = req.as_of
            if as_of is None:
                as_of = today = today or self.today()
            # the core's profile field by field by name, from the request's fields of the same names
            # (tests/test_declarations.py checks that they are the same fields)
            made.append(
                Profile(
                    **dict(zip(COPIED, copied(req), strict=True)),
                    as_of=as_of,
                    providers=sets[0],
                    regions=sets[1],
                    option_fields=fields,
                )
            )
        return made

    def outcomes(self, profile: Profile, kb: Knowledge) -> list[decision.Outcome]:
        """Every option's assessment (or its error); 422 when no option can be assessed at all."""
        outcomes = decision.assess_all(self.options, lambda o: self.assess(o, profile, kb))
        metrics.offers_considered(sum(o.assessment.offers_considered for o in outcomes if o.assessment is not None))
        if all(o.assessment is None for o in outcomes):
            raise NothingAssessable(
                "; ".join(f"{o.option}: {o.error}" for o in outcomes),
                field="gpu_model" if profile.gpu_model else None,
            )
        return outcomes

    @staticmethod
    def weights(req: ProfileCreate, kb: Knowledge) -> Mapping[str, float]:
        """The request's weights, else the knowledge base's defaults (not yet normalised)."""
        return req.weights.model_dump() if req.weights else decision.default_weights(kb)

    # ---- which variants insights compare, from what the plugins declare ------------------------

    def variants(self) -> list[Variant]:
        """Every option, once per plan for an option that prices plans differently, later keys first
        (so a pair lists the owner of hardware before the options that rent)."""
        found: list[Variant] = []
        for key in sorted(self.options, reverse=True):
            plans = self.options[key].spec.plans
            found.extend(Variant(key, plan) for plan in plans) if plans else found.append(Variant(key))
        return found

    def pairs(self) -> list[tuple[Variant, Variant]]:
        """Each pair of variants of different options, in the order of ``variants``."""
        vs = self.variants()
        return [(a, b) for i, a in enumerate(vs) for b in vs[i + 1 :] if a.option != b.option]

    def owner(self) -> Variant | None:
        """The option that declares it buys its hardware (payback, cheapest-from size), if one is loaded."""
        owner = self.host.owner()
        return None if owner is None else Variant(owner)

    def on_demand(self) -> Variant | None:
        """The variant that rents on demand (the recommendation's break-even sentence), if one is loaded."""
        return next((v for v in self.variants() if v.plan == "on_demand"), None)

    def own_versus_on_demand(self, profile: Profile, kb: Knowledge) -> Crossing | None:
        """Where owning and renting on demand cost the same per useful GPU-hour (the break-even sentence of
        recommendations and cost curves), or None when either option is not loaded."""
        owner, rent = self.owner(), self.on_demand()
        if owner is None or rent is None:
            return None
        return crossing(self, profile, kb, owner, rent)
