"""How a watch's events are signed and sent: the body's bytes, signed with the watch's secret.

``X-Compute-Advisor-Signature: sha256=<hex>`` is the HMAC-SHA256 of the exact body bytes with the secret;
a receiver computes it again over the raw body it received and compares in constant time (``verify``).
``X-Compute-Advisor-Delivery`` names the delivery: a retry, or a resend after a worker stopped mid-way,
carries the same one, so a receiver that saw it already answers 2xx and ignores the repeat.
"""

from __future__ import annotations

import hashlib
import hmac

from app import __version__

EVENT = "recommendation.drift"
SIGNATURE_HEADER = "X-Compute-Advisor-Signature"
DELIVERY_HEADER = "X-Compute-Advisor-Delivery"
EVENT_HEADER = "X-Compute-Advisor-Event"


def signature(secret: str, body: bytes) -> str:
    """``sha256=`` and the hex HMAC-SHA256 of ``body`` keyed with ``secret`` (UTF-8)."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify(secret: str, body: bytes, header: str) -> bool:
    """Whether ``header`` is the signature of ``body`` with ``secret`` (constant-time comparison)."""
    return hmac.compare_digest(signature(secret, body), header.strip())


def headers(secret: str, body: bytes, delivery_id: int) -> dict[str, str]:
    """The headers of a delivery."""
    return {
        "Content-Type": "application/json",
        "User-Agent": f"compute-advisor/{__version__}",
        SIGNATURE_HEADER: signature(secret, body),
        DELIVERY_HEADER: str(delivery_id),
        EVENT_HEADER: EVENT,
    }
