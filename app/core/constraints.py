"""The hard constraints an offer may break (docs/methodology.md "Hard constraints"): each a code, where it
holds for a profile (a bool, or an array over a batch) and, for what is answered, its sentence.

Capacity, a volume tier's smallest order, the expected lead time against ``start_within_days``, data
residency against ``data_security`` (who shares the hardware, and where it is: ``app.core.residency``),
the largest job against the offer's nodes and interconnect,
preemptible capacity against ``preemptible_share``, and the availability rules that bind the buyer or
the place the hardware is in (``app.core.availability``); a job whose failures outrun its recovery stalls.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Protocol

from app.core import availability as rules
from app.core import model
from app.core import residency as data_residency
from app.core.columns import Columns, holds
from app.core.kernel import Candidate, Quote
from app.core.knowledge import AvailabilityRule, Knowledge
from app.core.ranges import Range
from app.core.text import Msg, joined, msg, num, pct, span
from app.core.types import Profile


class Offering(Protocol):
    """What the constraints read of an offer kernel (``app.core.offer_kernel.OfferKernel``)."""

    knowledge: Knowledge
    as_of: dt.date
    compiled: dict[Any, Any]

    @property
    def preemptible_plans(self) -> frozenset[str]: ...

    def jurisdiction(self, c: Candidate, profile: Profile) -> str: ...


#: interconnects as sentences name them
FABRIC_NAMES = {
    "infiniband": "InfiniBand",
    "roce": "RoCE",
    "efa": "EFA",
    "tcpxo": "GPUDirect-TCPXO",
    "tcpx": "GPUDirect-TCPX",
    "ethernet": "Ethernet",
    "unknown": "unknown",
}


def scaling_key(c: Candidate) -> str | None:
    """The assumption that scales a job spanning the offer's nodes (``multi_node_scaling_<fabric>``), None
    where a job cannot span them."""
    return f"multi_node_scaling_{c.interconnect}" if c.multi_node else None


def availability(kernel: Offering, c: Candidate, profile: Profile) -> list[AvailabilityRule]:
    """The availability rules that bind the offer for the profile on the period's day: rules for buyers
    where ``buyer_country`` is, rules of a location where its hardware is (``app.core.availability``)."""
    return rules.bound(kernel, c, profile)


@dataclass(frozen=True, slots=True)
class Checks:
    """What an offer's hard constraints test, compiled once per candidate (``OfferKernel.prepare``)."""

    #: GPUs the offer can sell at most (None: no limit known)
    capacity: int | None
    #: a volume tier's smallest order (None or 0: none)
    min_gpus: int | None
    #: the expected lead time in days (tested against ``start_within_days``)
    lead_expected: Any
    #: the ``data_security`` levels the offer's residency does not satisfy
    refused: frozenset[str]
    #: the one node a job must fit on (None: nodes of a training fabric, a job may span them)
    node_gpus: int | None
    #: capacity the provider may take back at any time (spot)
    preemptible: bool


def checks(kernel: Offering, c: Candidate, lead: Range) -> Checks:
    """The facts the hard constraints of ``c`` test, read once."""
    row = c.offer.row
    kb = kernel.knowledge
    return Checks(
        capacity=row.capacity_gpus,
        min_gpus=row.min_gpus,
        lead_expected=lead.expected,
        refused=frozenset(level for level in kb.security_levels if not kb.accepts(level, row.residency)),
        node_gpus=None if c.multi_node else c.node_gpus,
        preemptible=c.plan in kernel.preemptible_plans,
    )


def hard_constraints(kernel: Offering, c: Candidate, at: Columns) -> list[tuple[str, Any]]:
    """The hard constraints an offer breaks for the profile (code, where: a bool or an array over a
    batch): capacity, a volume tier's minimum, the expected lead time, data residency, the largest
    job's nodes, preemptible capacity and the availability rules."""
    k: Checks = c.checks
    found: list[tuple[str, Any]] = []
    gt = at.gt
    if k.capacity is not None and holds(where := gt(at.gpus, k.capacity)):
        found.append(("capacity", where))
    if k.min_gpus and holds(where := gt(k.min_gpus, at.gpus)):  # a volume tier: sold from this many GPUs
        found.append(("min_gpus", where))
    if at.start_within_days is not None and holds(where := gt(k.lead_expected, at.start_within_days)):
        found.append(("lead_time", where))
    if at.profile.data_security in k.refused or data_residency.outside(kernel.knowledge, at.profile, c.offer.row):
        found.append(("residency", True))
    if k.node_gpus is not None and holds(where := gt(at.job_gpus, k.node_gpus)):  # the job must fit one node
        found.append(("multi_node", where))
    if k.preemptible and holds(where := gt(1.0, at.preemptible_share)):
        found.append(("preemptible", where))
    if (refused := rules.refusal(kernel, c, at.profile)) is not None:  # export, import, a grey-market quote
        found.append((refused, True))
    return found


def shared_reason(kernel: Offering, profile: Profile, quote: Quote, code: str) -> str:
    c = quote.candidate
    assert c is not None
    label = c.label
    if code == "capacity":
        capacity = c.offer.row.capacity_gpus
        return msg("violation.capacity", f"{label} sells at most {capacity:,} GPUs", offer=label, gpus=f"{capacity:,}")
    if code == "lead_time":
        lead = quote.efficiency.lead_time_days
        days = num(profile.start_within_days or 0)
        return msg(
            "violation.lead_time",
            f"compute is needed within {days} days, but {label} takes "
            f"{span(lead, 'days')} to obtain (expected {num(lead.expected)})",
            days=days,
            offer=label,
            lead_time=span(lead, "days").removesuffix(" days"),
            expected=num(lead.expected),
        )
    if code == "residency" and profile.data_security not in c.checks.refused:  # refused for where it is
        return data_residency.reason(kernel.knowledge, profile, label, c.offer.row)
    if code == "residency":
        level = kernel.knowledge.security_levels[profile.data_security]
        residency = residency_name(c.offer.row.residency or "unknown")
        security = msg(f"data_security.{profile.data_security}", profile.data_security)
        accepted = joined(", ", [residency_name(r) for r in level.accepted_residencies])
        return msg(
            "violation.residency",
            f"{label} is {residency}, but {security} data security accepts only {accepted}",
            offer=label,
            residency=residency,
            data_security=security,
            accepted=accepted,
        )
    if code == "min_gpus":
        least = f"{c.offer.row.min_gpus:,}"
        return msg("violation.min_gpus", f"{label} is sold from {least} GPUs", offer=label, gpus=least)
    if code == "multi_node":
        job = num(profile.job_gpus)
        fabric = c.interconnect or "unknown"
        shown = FABRIC_NAMES.get(fabric, fabric)
        return msg(
            "violation.multi_node",
            f"the largest job needs {job} GPUs, more than one {num(c.node_gpus)}-GPU node of {label}, whose "
            f"nodes are joined by {shown} interconnect (a job across nodes needs nodes of 8 GPUs or more "
            "joined by InfiniBand, RoCE, EFA or GPUDirect-TCPX/TCPXO)",
            job=job,
            node=num(c.node_gpus),
            offer=label,
            interconnect=msg(f"interconnect.{fabric}", shown),
        )
    if code == "preemptible":
        share = pct(profile.preemptible_share)
        return msg(
            "violation.preemptible",
            f"{label} can be taken back at any time, but only {share} of the work tolerates preemption",
            offer=label,
            share=share,
        )
    if code in rules.CODES:
        return rules.reason(kernel, c, profile, label, code)
    if code == "stalled":
        return model.STALLED
    if code == "every":
        return msg("violation.every", "every offer breaks a constraint")
    raise KeyError(code)


def residency_name(residency: str) -> Msg:
    """Where an offer keeps the data, as people say it (``residency.<key>``: "a shared public cloud")."""
    return msg(f"residency.{residency}", residency.replace("_", " "))
