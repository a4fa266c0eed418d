"""API v1 schemas of watches and their deliveries."""

from __future__ import annotations

import datetime as dt
from typing import Any

import msgspec
from pydantic import Field

from app.core.vocab import DeliveryStatus
from app.domain.shared.schemas import StoredList
from app.web.schemas import RequestModel

#: the shortest and longest secret accepted (characters)
SECRET_MIN, SECRET_MAX = 16, 200
#: the largest ``min_cost_change`` (a fraction: 10 is a tenfold change)
MAX_COST_CHANGE = 10.0


class WatchCreate(RequestModel):
    """A stored recommendation to watch, and where to send its drift events."""

    recommendation_id: str = Field(min_length=1, max_length=36, description="A stored recommendation's id.")
    url: str = Field(
        min_length=1,
        max_length=2000,
        description="Where events are POSTed: an `http` or `https` URL whose host `WATCH_ALLOWED_HOSTS` allows "
        "(never a link-local or cloud metadata address unless that exact address is listed).",
    )
    # the bounds below are checked by the service (422 naming the field, ``app.domain.procurement.watches``)
    secret: str = Field(
        description="The key each event's `X-Compute-Advisor-Signature` (HMAC-SHA256 of the body) is made with; "
        "16 to 200 characters (else 422); never answered back.",
        json_schema_extra={"minLength": SECRET_MIN, "maxLength": SECRET_MAX},
    )
    min_cost_change: float = Field(
        default=0.05,
        description="An event is sent when an option's expected total cost moved by at least this fraction of "
        "the stored one (0.05: 5 %); 0 to 10 (else 422).",
        json_schema_extra={"minimum": 0, "maximum": MAX_COST_CHANGE},
    )
    on_rank_change: bool = Field(
        default=True, description="An event is also sent when the ranking or the recommended option changed."
    )


class WatchRead(msgspec.Struct):
    id: str
    recommendation_id: str
    url: str
    min_cost_change: float
    on_rank_change: bool
    created_at: dt.datetime
    #: the knowledge version (with its ``+org:`` book) the recommendation was last checked on
    checked_version: str | None
    #: the organisation the watch belongs to (null: the key's own)
    org: str | None


class WatchList(StoredList):
    items: list[WatchRead]


class AttemptRead(msgspec.Struct, omit_defaults=True):
    """One attempt of a delivery: when, what the receiver answered (or the error), how long it took."""

    at: dt.datetime
    seconds: float
    status: int | None = None
    error: str | None = None


class DeliveryRead(msgspec.Struct):
    id: int
    #: the knowledge version (with its ``+org:`` book) the event is about: one event per watch and version
    event: str
    status: DeliveryStatus
    attempts: int
    #: when it is (or was) next tried
    next_attempt_at: dt.datetime
    #: the receiver's last HTTP status (null: none answered)
    last_status: int | None
    last_error: str | None
    created_at: dt.datetime
    delivered_at: dt.datetime | None
    history: list[AttemptRead]


class DeliveryList(StoredList):
    items: list[DeliveryRead]


def attempt(at: dt.datetime, seconds: float, status: int | None, error: str | None) -> dict[str, Any]:
    """An attempt as ``history`` stores it (JSON)."""
    found: dict[str, Any] = {"at": at.isoformat(), "seconds": round(seconds, 3)}
    if status is not None:
        found["status"] = status
    if error is not None:
        found["error"] = error
    return found
