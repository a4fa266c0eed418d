"""The base of every seed record: a frozen pydantic model that refuses fields it does not declare."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class SeedRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
