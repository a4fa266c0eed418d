"""API key expiry, rotation and last use; retention of stored recommendations (both databases).

- ``keys create --expires-in``: the key works until then, then answers 401 of type ``…:key-expired``
  saying when it expired (checked at every request, a cached key too);
- ``keys rotate --grace``: a new key with the same scopes; the old one works during the grace period,
  then is expired; audited; a revoked key cannot be rotated;
- ``last_used_at`` is written in the background, at most once a minute per key and process;
- ``recommendations prune [--days N] [--dry-run]``: deletes what is older (and its Idempotency-Key
  claims), audited; a dry run deletes nothing; ``RECOMMENDATION_RETENTION_DAYS`` is the default.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from typing import Any

import pytest
from conftest import SME_PROFILE, Databases, create_key, make_client
from test_idempotency import sql

from app.cli import main
from app.web.auth import KeyUsage

TYPE = "urn:compute-advisor:problem:"


@pytest.fixture
def db(databases: Databases, backend: str, monkeypatch: pytest.MonkeyPatch) -> str:
    url = databases.seeded(backend)
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.delenv("RECOMMENDATION_RETENTION_DAYS", raising=False)
    return url


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _new_key(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code, out, err = cli(capsys, "keys", "create", "--name", "team", "--scope", "recommendations:write", *extra)
    assert code == 0, err
    key_id = int(out.split("created API key ")[1].split()[0])
    return key_id, out.strip().splitlines()[-1]


def _past(url: str, key_id: int) -> None:
    sql(
        url,
        "UPDATE api_keys SET expires_at = :t WHERE id = :i",
        t=dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1),
        i=key_id,
    )


def test_a_key_expires(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    key_id, key = _new_key(capsys, "--expires-in", "90d")
    code, out, _ = cli(capsys, "keys", "list")
    expected = (dt.datetime.now(dt.UTC) + dt.timedelta(days=90)).strftime("%Y-%m-%d")
    assert code == 0 and expected in next(line for line in out.splitlines() if line.strip().startswith(str(key_id)))
    with make_client(db, api_key=key) as client:
        assert client.post("/v1/recommendations", json=SME_PROFILE).status_code == 201
    _past(db, key_id)
    with make_client(db, api_key=key) as client:
        refused = client.post("/v1/recommendations", json=SME_PROFILE)
    assert refused.status_code == 401
    assert refused.json()["type"] == TYPE + "key-expired"
    assert "expired at" in refused.json()["detail"]
    assert refused.headers["WWW-Authenticate"].startswith("ApiKey")


@pytest.mark.parametrize("bad", ["90", "d", "0d", "-1d", "3y"])
def test_a_bad_duration_is_refused(db: str, capsys: pytest.CaptureFixture[str], bad: str) -> None:
    code, _, err = cli(capsys, "keys", "create", "--name", "x", "--scope", "admin", "--expires-in", bad)
    assert code == 2 and "--expires-in" in err


def test_rotate_keeps_the_old_key_for_the_grace_period(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    old_id, old_key = _new_key(capsys)
    code, out, err = cli(capsys, "keys", "rotate", str(old_id), "--grace", "2h", "--actor", "ops")
    assert code == 0, err
    new_key = out.strip().splitlines()[-1]
    new_id = int(out.split("replaced by API key ")[1].split(";")[0])
    assert new_key.startswith("ca_") and new_key != old_key
    with make_client(db, api_key=old_key) as client:
        assert client.post("/v1/recommendations", json=SME_PROFILE).status_code == 201  # within the grace period
    with make_client(db, api_key=new_key) as client:
        assert client.post("/v1/recommendations", json=SME_PROFILE).status_code == 201
        assert client.get("/v1/gpus").status_code == 403  # the same scopes, no more
    assert sql(db, "SELECT replaced_by_id FROM api_keys WHERE id = :i", i=old_id) == new_id
    assert sql(db, "SELECT count(*) FROM audit_events WHERE action = 'key.rotate' AND actor = 'ops'") == 1
    # the audit trail names both keys by id (never "key None")
    rotated = sql(db, "SELECT subject FROM audit_events WHERE action = 'key.rotate'")
    assert rotated.startswith(f"key {old_id} (") and rotated.endswith(f"replaced by key {new_id}")
    created = sql(db, "SELECT subject FROM audit_events WHERE action = 'key.create' ORDER BY id DESC LIMIT 1")
    assert created.startswith(f"key {new_id} (")
    _past(db, old_id)  # the grace period is over
    with make_client(db, api_key=old_key) as client:
        assert client.post("/v1/recommendations", json=SME_PROFILE).json()["type"] == TYPE + "key-expired"
    assert cli(capsys, "keys", "revoke", str(new_id))[0] == 0
    code, _, err = cli(capsys, "keys", "rotate", str(new_id))
    assert code == 2 and "revoked" in err
    assert cli(capsys, "keys", "rotate", "999999")[0] == 2


def test_last_use_is_recorded_in_the_background(db: str) -> None:
    key_id, key = create_key(db, ["recommendations:write"])
    assert sql(db, "SELECT last_used_at FROM api_keys WHERE id = :i", i=key_id) is None
    with make_client(db, api_key=key) as client:
        assert client.post("/v1/recommendations?store=false", json=SME_PROFILE).status_code == 200
        deadline = time.monotonic() + 30
        while sql(db, "SELECT last_used_at FROM api_keys WHERE id = :i", i=key_id) is None:
            assert time.monotonic() < deadline, "last_used_at not written"
            time.sleep(0.05)


def test_key_usage_writes_once_a_minute_per_key() -> None:
    written: list[dict[int, Any]] = []
    now = [1000.0]

    async def write(used: dict[int, Any]) -> None:
        written.append(dict(used))

    async def run() -> None:
        usage = KeyUsage(write, interval=60.0, clock=lambda: now[0])
        for _ in range(100):
            usage.touch(1)
        usage.touch(2)
        await usage.drain()
        now[0] += 30
        usage.touch(1)
        await usage.drain()
        now[0] += 31
        usage.touch(1)
        await usage.drain()

    asyncio.run(run())
    assert [sorted(w) for w in written] == [[1, 2], [1]]


def test_prune_deletes_what_is_older_than_the_retention(
    db: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with make_client(db) as client:
        ids = [
            client.post("/v1/recommendations", json=SME_PROFILE, headers={"Idempotency-Key": f"p{n}"}).json()["id"]
            for n in range(4)
        ]
    old = dt.datetime.now(dt.UTC) - dt.timedelta(days=40)
    for rec_id in ids[:2]:
        sql(db, "UPDATE recommendations SET created_at = :t WHERE id = :i", t=old, i=rec_id)
    total = sql(db, "SELECT count(*) FROM recommendations")

    code, out, _ = cli(capsys, "recommendations", "prune", "--days", "30", "--dry-run")
    assert code == 0 and "would delete 2 recommendations" in out and "would delete 2 Idempotency-Key" in out
    assert sql(db, "SELECT count(*) FROM recommendations") == total

    code, out, _ = cli(capsys, "recommendations", "prune")  # no retention configured: keeps them
    assert code == 0 and "deleted 0 recommendations" in out
    monkeypatch.setenv("RECOMMENDATION_RETENTION_DAYS", "30")
    code, out, _ = cli(capsys, "recommendations", "prune", "--actor", "cron")
    assert code == 0 and "deleted 2 recommendations" in out, out
    assert sql(db, "SELECT count(*) FROM recommendations") == total - 2
    assert sql(db, "SELECT count(*) FROM idempotency_keys WHERE key IN ('p0', 'p1')") == 0
    assert sql(db, "SELECT count(*) FROM idempotency_keys WHERE key IN ('p2', 'p3')") == 2
    assert sql(db, "SELECT count(*) FROM audit_events WHERE action = 'recommendations.prune' AND actor = 'cron'") == 1
    with make_client(db) as client:
        assert client.get(f"/v1/recommendations/{ids[0]}").status_code == 404
        assert client.get(f"/v1/recommendations/{ids[3]}").status_code == 200
