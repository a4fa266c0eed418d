"""Settings, read from the environment when asked for — never at import time."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATABASE_URL = f"sqlite:///{PROJECT_ROOT / 'compute-advisor.db'}"
DEFAULT_SEEDS_PATH = PROJECT_ROOT / "seeds"


def async_url(url: str) -> str:
    """Turn a plain ``sqlite:///…`` or ``postgresql://…`` URL into its async-driver form."""
    if url.startswith("sqlite:///"):
        return "sqlite+aiosqlite:///" + url.removeprefix("sqlite:///")
    for prefix in ("postgresql://", "postgres://", "postgresql+psycopg://", "postgresql+psycopg2://"):
        if url.startswith(prefix):
            return "postgresql+asyncpg://" + url.removeprefix(prefix)
    return url


@dataclass(frozen=True, slots=True)
class Settings:
    database_url: str = DEFAULT_DATABASE_URL
    seeds_path: Path = DEFAULT_SEEDS_PATH
    #: seconds between two checks for a new knowledge version
    knowledge_refresh_seconds: float = 2.0
    #: largest request body accepted, in bytes
    max_body_bytes: int = 1_048_576
    debug: bool = False
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def async_database_url(self) -> str:
        return async_url(self.database_url)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        return cls(
            database_url=env.get("DATABASE_URL") or DEFAULT_DATABASE_URL,
            seeds_path=Path(env.get("SEEDS_PATH") or DEFAULT_SEEDS_PATH),
            knowledge_refresh_seconds=float(env.get("KNOWLEDGE_REFRESH_SECONDS") or 2.0),
            max_body_bytes=int(env.get("MAX_BODY_BYTES") or 1_048_576),
            debug=(env.get("DEBUG") or "").lower() in {"1", "true", "yes"},
        )
