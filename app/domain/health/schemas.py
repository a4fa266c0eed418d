"""Schemas of liveness and readiness."""

from __future__ import annotations

from typing import Any, Literal

import msgspec


class HealthRead(msgspec.Struct):
    status: Literal["ok", "unavailable"]
    checks: dict[str, Any]
