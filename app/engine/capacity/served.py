"""The sentences of a capacity plan about serving its demand, as message codes (``capacity.demand.*`` in
app/i18n/locales): a portfolio that leaves demand unserved, one that starts late because nothing may
bridge its first cluster's delivery, an option that serves only after waiting."""

from __future__ import annotations

from app.core.text import Msg, msg, num, pct


def unserved(share: float) -> Msg:
    """A portfolio that leaves part of its demand unserved is not compared with those that serve it all."""
    shown = pct(share)
    return msg(
        "capacity.demand.unserved",
        f"Not feasible: it serves {shown} of the demand's useful GPU-hours, not all of it; portfolios are "
        "compared only when each serves the whole demand.",
        share=shown,
    )


def deferred(days: float, share: float) -> Msg:
    """A first cluster whose wait for delivery nothing else may bridge: the team starts late."""
    shown, served = num(round(days)), pct(share)
    return msg(
        "capacity.demand.deferred",
        f"Starts {shown} days late: no other option may serve the demand until the cluster is installed, so "
        f"it serves {served} of the demand's useful GPU-hours (a start that late is within the start asked for, "
        "or none was asked).",
        days=shown,
        share=served,
    )


def waits() -> Msg:
    """An option whose every quote waits for delivery inside the demand, with nothing to bridge the wait."""
    return msg(
        "capacity.demand.waits",
        "Not feasible: it serves the demand only after waiting for delivery, and no other capacity can bridge "
        "the wait (its GPUs and largest job, from the first day).",
    )


__all__ = ["deferred", "unserved", "waits"]
