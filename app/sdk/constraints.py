"""The hard constraints an offer may break (docs/methodology.md "Hard constraints"): each a code, where it
holds for a profile (a bool, or an array over a batch) and, for what is answered, its sentence.

Capacity, a volume tier's smallest order, the expected lead time against ``start_within_days``, data
residency against ``data_security``, the largest job against the offer's nodes and interconnect,
preemptible capacity against ``preemptible_share``, and the export controls of the place the
hardware is in (``availability_rules``); a job whose failures outrun its recovery stalls.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Protocol

from app.sdk import model
from app.sdk.kernel import Candidate, Quote
from app.sdk.knowledge import ANY, AvailabilityRule, Knowledge
from app.sdk.pricing import gt, holds
from app.sdk.ranges import Range
from app.sdk.text import msg, num, pct, span
from app.sdk.types import Profile


class Offering(Protocol):
    """What the constraints read of an offer kernel (``app.sdk.offer_kernel.OfferKernel``)."""

    knowledge: Knowledge
    as_of: dt.date
    compiled: dict[str, Any]

    @property
    def preemptible_plans(self) -> frozenset[str]: ...

    def jurisdiction(self, c: Candidate, profile: Profile) -> str: ...


#: the fabrics that join a multi-node training job's nodes (ethernet without RDMA does not)
TRAINING_FABRICS = frozenset({"infiniband", "roce", "efa"})
#: interconnects as sentences name them
FABRIC_NAMES = {"infiniband": "InfiniBand", "roce": "RoCE", "efa": "EFA", "ethernet": "Ethernet", "unknown": "unknown"}
#: the smallest node a multi-node training job spans
MIN_NODE_GPUS = 8


def multi_node(c: Candidate) -> bool:
    """Whether a job may span several of the offer's nodes: nodes of ``MIN_NODE_GPUS`` or more joined
    by a training fabric."""
    return c.node_gpus >= MIN_NODE_GPUS and c.interconnect in TRAINING_FABRICS


def availability(kernel: Offering, c: Candidate, profile: Profile) -> list[AvailabilityRule]:
    """The export controls on the offer's GPU model where its hardware is, valid on the period's day."""
    gpu = c.offer.row.gpu_model
    if gpu == ANY or not kernel.knowledge.availability:
        return []
    key = f"availability:{gpu}:{kernel.jurisdiction(c, profile)}"
    found: list[AvailabilityRule] | None = kernel.compiled.get(key)
    if found is None:
        place = kernel.jurisdiction(c, profile)
        within = kernel.knowledge.within
        found = [
            r
            for r in kernel.knowledge.availability
            if r.gpu_model == gpu and r.valid_on(kernel.as_of) and within(place, r.jurisdiction)
        ]
        kernel.compiled[key] = found
    return found


def hard_constraints(kernel: Offering, c: Candidate, profile: Profile, lead: Range) -> list[tuple[str, Any]]:
    """The hard constraints an offer breaks (code, where: a bool or an array over a batch):
    capacity, the expected lead time, and data residency."""
    found: list[tuple[str, Any]] = []
    row = c.offer.row
    if row.capacity_gpus is not None:
        found.append(("capacity", gt(profile.gpus, row.capacity_gpus)))
    if row.min_gpus:  # a volume tier: sold from this many GPUs
        found.append(("min_gpus", gt(row.min_gpus, profile.gpus)))
    if profile.start_within_days is not None:
        found.append(("lead_time", gt(lead.expected, profile.start_within_days)))
    if not kernel.knowledge.accepts(profile.data_security, row.residency):
        found.append(("residency", True))
    if not multi_node(c):  # the largest job must fit on one node
        found.append(("multi_node", gt(profile.job_gpus, c.node_gpus)))
    if c.plan in kernel.preemptible_plans:
        found.append(("preemptible", gt(1.0, profile.preemptible_share)))
    if any(r.effect == "unavailable" for r in availability(kernel, c, profile)):
        found.append(("export_controlled", True))
    return [(code, where) for code, where in found if holds(where)]


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
    if code == "residency":
        level = kernel.knowledge.security_levels[profile.data_security]
        residency = c.offer.row.residency
        return msg(
            "violation.residency",
            f"{label} is {residency}; data_security '{profile.data_security}' accepts "
            f"{', '.join(level.accepted_residencies)}",
            offer=label,
            residency=residency,
            data_security=profile.data_security,
            accepted=", ".join(level.accepted_residencies),
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
            "joined by InfiniBand, RoCE or EFA)",
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
    if code == "export_controlled":
        rules = [r for r in availability(kernel, c, profile) if r.effect == "unavailable"]
        place = kernel.jurisdiction(c, profile)
        return msg(
            "violation.export_controlled",
            f"{c.offer.row.gpu_model} is export-controlled for {place} ({rules[0].source})",
            gpu_model=c.offer.row.gpu_model,
            jurisdiction=place,
            source=rules[0].source,
        )
    if code == "stalled":
        return model.STALLED
    if code == "every":
        return "every offer breaks a constraint"
    raise KeyError(code)
