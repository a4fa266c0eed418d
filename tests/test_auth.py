"""API keys with scopes, and the audit trail: every route, revocation, hashing, ownership, CLI, audit."""

from __future__ import annotations

import asyncio
import re
import stat
import time
from pathlib import Path

import pytest
from conftest import SEEDS, SME_PROFILE, Databases, create_key, load_seeds, make_client
from litestar.handlers.http_handlers import HTTPRouteHandler
from litestar.routes import HTTPRoute
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from app.asgi import create_app
from app.cli import main
from app.kb import keys
from app.settings import Settings
from app.web.auth import KeyVerifier, Principal, protected_handlers
from app.web.public import PUBLIC_PATHS

PROFILE = SME_PROFILE


def _is_public(path: str) -> bool:
    return any(re.match(p, path) for p in PUBLIC_PATHS)


def _concrete(path_format: str) -> str:
    """The path with every parameter filled in with ``1`` (a string parameter's value, and an integer one's)."""
    return re.sub(r"\{[^}]+\}", "1", path_format)


def _all_route_handlers() -> list[tuple[HTTPRoute, HTTPRouteHandler, str]]:
    app = create_app(Settings(database_url="sqlite:///:memory:"))
    found = []
    for route in app.routes:
        assert isinstance(route, HTTPRoute), route
        for handler in route.route_handlers:
            for method in sorted(handler.http_methods):
                found.append((route, handler, method))
    return found


def test_every_route_but_health_and_docs_declares_a_known_scope() -> None:
    checked = 0
    for route, handler, method in _all_route_handlers():
        if _is_public(route.path) or method == "OPTIONS":
            assert "scope" not in handler.opt, route.path
            continue
        assert handler.opt.get("scope") in keys.SCOPES, f"{method} {route.path} declares no known scope"
        checked += 1
    assert checked >= 17
    # and the open ones are exactly health, docs and the explorer page
    public = {r.path for r, _, m in _all_route_handlers() if _is_public(r.path) and m != "OPTIONS"}
    assert {"/health/live", "/health/ready"} <= public
    assert all(p.startswith(("/health/", "/docs", "/explorer")) for p in public)


def test_every_protected_route_answers_401_without_a_key_and_403_with_the_wrong_scope(seeded_db: str) -> None:
    """Walks every registered route: no key → 401 problem with WWW-Authenticate; a key holding every
    scope but the route's (and not admin) → 403 problem; the right scope gets past the guard."""
    with make_client(seeded_db, api_key=None) as c:
        routes = [(r, h) for r, h in protected_handlers(c.app)]
        assert routes
        for route, handler in routes:
            required = handler.opt["scope"]
            others = [s for s in keys.SCOPES if s not in (required, keys.ADMIN)]
            _, wrong = create_key(seeded_db, others or ["catalog:read"], name=f"without {required}")
            # of an organisation: the private price book's routes need one (a key of none: 403 no-organisation)
            _, right = create_key(seeded_db, [required], name=f"with {required}", org="route-walkers")
            path = _concrete(route.path_format)
            for method in handler.http_methods:
                body = {} if method in {"POST", "PUT", "PATCH"} else None
                r = c.request(method, path, json=body)
                assert r.status_code == 401, (method, path, r.text)
                assert r.headers["content-type"].startswith("application/problem+json")
                assert r.headers["www-authenticate"] == 'ApiKey header="X-API-Key"'
                assert r.json()["type"].endswith(":unauthenticated")

                r = c.request(method, path, json=body, headers={"X-API-Key": "ca_not-a-real-key"})
                assert r.status_code == 401, (method, path, r.text)

                r = c.request(method, path, json=body, headers={"X-API-Key": wrong})
                assert r.status_code == 403, (method, path, r.text)
                assert r.json()["type"].endswith(":forbidden")
                assert required in r.json()["detail"]

                r = c.request(method, path, json=body, headers={"X-API-Key": right})
                assert r.status_code not in (401, 403), (method, path, r.text)


def test_health_and_docs_need_no_key(seeded_db: str) -> None:
    with make_client(seeded_db, api_key=None) as c:
        assert c.get("/health/live").status_code == 200
        assert c.get("/health/ready").status_code == 200
        assert c.get("/docs/openapi.json").status_code == 200


def test_the_openapi_document_declares_the_scheme_and_401_403_on_every_protected_operation(seeded_db: str) -> None:
    with make_client(seeded_db, api_key=None) as c:
        doc = c.get("/docs/openapi.json").json()
    scheme = doc["components"]["securitySchemes"]["ApiKey"]
    assert scheme["type"] == "apiKey" and scheme["name"] == "X-API-Key" and scheme["in"] == "header"
    operations = 0
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if path.startswith("/health"):
                assert op["security"] == []  # open to all, and said so
                continue
            operations += 1
            assert op["security"] == [{"ApiKey": []}], (method, path)
            assert {"401", "403"} <= set(op["responses"]), (method, path)
            assert "WWW-Authenticate" in op["responses"]["401"]["headers"]
    assert operations >= 17


def test_a_revoked_key_gets_401_within_the_cache_time(seeded_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    key_id, key = create_key(seeded_db, ["catalog:read"], name="to revoke")
    monkeypatch.setenv("DATABASE_URL", seeded_db)
    settings = Settings(database_url=seeded_db, api_key_cache_seconds=0.3)
    with make_client(seeded_db, api_key=key, settings=settings) as c:
        assert c.get("/v1/options").status_code == 200
        assert main(["keys", "revoke", str(key_id)]) == 0
        time.sleep(0.4)
        r = c.get("/v1/options")
        assert r.status_code == 401, r.text
        assert "revoked" in r.json()["detail"]


def test_with_cache_zero_revocation_is_immediate(seeded_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    key_id, key = create_key(seeded_db, ["catalog:read"], name="cache zero")
    monkeypatch.setenv("DATABASE_URL", seeded_db)
    settings = Settings(database_url=seeded_db, api_key_cache_seconds=0)
    with make_client(seeded_db, api_key=key, settings=settings) as c:
        assert c.get("/v1/gpus").status_code == 200
        assert main(["keys", "revoke", str(key_id)]) == 0
        assert c.get("/v1/gpus").status_code == 401


def test_keys_are_stored_hashed(seeded_db: str) -> None:
    _, key = create_key(seeded_db, ["catalog:read"], name="hashed")

    async def dump() -> str:
        engine = create_async_engine(Settings(database_url=seeded_db).async_database_url)
        try:
            async with engine.connect() as conn:
                out = []
                for table in ("api_keys", "audit_events"):
                    rows = (await conn.execute(text(f"SELECT * FROM {table}"))).all()
                    out.extend(repr(tuple(r)) for r in rows)
                return "\n".join(out)
        finally:
            await engine.dispose()

    everything = asyncio.run(dump())
    assert key not in everything
    assert key[8:] not in everything  # nothing beyond the 8-character display prefix
    assert keys.hash_key(key) in everything
    assert key.startswith("ca_") and len(key) == 46


def _verifier(lookup_result: list[object], cache: float, clock: list[float]) -> KeyVerifier:
    async def lookup(key: str) -> Principal | None:
        value = lookup_result[0]
        if isinstance(value, Exception):
            raise value
        return value  # type: ignore[return-value]

    return KeyVerifier(lookup, cache, clock=lambda: clock[0])


def test_degraded_mode_keeps_recently_verified_keys_working_while_the_database_is_unreachable() -> None:
    from litestar.exceptions import ServiceUnavailableException

    alice = Principal(1, "alice", "ca_abcde", frozenset({"catalog:read"}))
    result: list[object] = [alice]
    clock = [1000.0]
    v = _verifier(result, 1.0, clock)
    assert asyncio.run(v.verify("ca_alice")) is alice
    result[0] = ConnectionRefusedError("database down")
    clock[0] += 5  # past the cache time: the database is asked, and fails
    assert asyncio.run(v.verify("ca_alice")) is alice
    clock[0] += 601  # verified more than 10 minutes ago: no longer trusted
    with pytest.raises(ServiceUnavailableException):
        asyncio.run(v.verify("ca_alice"))
    with pytest.raises(ServiceUnavailableException):  # never verified
        asyncio.run(v.verify("ca_bob"))
    result[0] = None  # the database is back and says the key is revoked
    assert asyncio.run(v.verify("ca_alice")) is None


def test_requests_that_find_the_cache_expired_together_share_one_lookup() -> None:
    alice = Principal(1, "alice", "ca_abcde", frozenset({"catalog:read"}))
    lookups: list[str] = []
    release = asyncio.Event()

    async def lookup(key: str) -> Principal | None:
        lookups.append(key)
        await release.wait()
        return alice if key == "ca_alice" else None

    async def burst() -> list[Principal | None]:
        v = KeyVerifier(lookup, 1.0)
        waiting = [asyncio.ensure_future(v.verify(k)) for k in ["ca_alice"] * 30 + ["ca_bob"] * 2]
        await asyncio.sleep(0)
        waiting[0].cancel()  # a client that goes away does not cancel the others' lookup
        await asyncio.sleep(0)
        release.set()
        return await asyncio.gather(*waiting[1:])

    answers = asyncio.run(burst())
    assert sorted(lookups) == ["ca_alice", "ca_bob"]  # one lookup per key, not one per request
    assert answers == [alice] * 29 + [None, None]


def test_a_key_in_steady_use_is_looked_up_again_before_its_cache_entry_expires() -> None:
    """Past half the cache time a request gets the cached principal at once and the key is looked up in
    the background; the entry is renewed from when that lookup started, so no request waits for it, and
    a revocation it finds is the answer of the next request."""
    alice = Principal(1, "alice", "ca_abcde", frozenset({"catalog:read"}))
    result: list[object] = [alice]
    lookups: list[float] = []
    clock = [1000.0]
    release = asyncio.Event()

    async def lookup(key: str) -> Principal | None:
        lookups.append(clock[0])
        await release.wait()
        return result[0]  # type: ignore[return-value]

    async def settled() -> None:  # the loop runs what the lookups scheduled
        for _ in range(10):
            await asyncio.sleep(0)

    async def steady() -> None:
        v = KeyVerifier(lookup, 1.0, clock=lambda: clock[0])
        release.set()
        assert await v.verify("ca_alice") is alice  # the first use waits for its lookup
        release.clear()
        clock[0] += 0.4
        assert await v.verify("ca_alice") is alice and lookups == [1000.0]  # young: no lookup
        clock[0] += 0.2  # 0.6 s old: answered from the cache at once, looked up behind it
        assert await asyncio.wait_for(v.verify("ca_alice"), 0.1) is alice
        assert await asyncio.wait_for(v.verify("ca_alice"), 0.1) is alice  # one lookup under way, not two
        assert lookups == [1000.0, 1000.6]
        release.set()
        await settled()
        clock[0] += 0.8  # 1.4 s after the first lookup, 0.8 s after the renewing one: still cached
        release.clear()
        assert await asyncio.wait_for(v.verify("ca_alice"), 0.1) is alice
        await settled()  # the lookup behind it starts
        assert lookups == [1000.0, 1000.6, 1001.4]  # and renewed again behind it
        result[0] = None  # revoked: the lookup under way finds it
        release.set()
        await settled()
        assert await v.verify("ca_alice") is None  # the next request asks the database and is refused

    asyncio.run(steady())


def test_recommendations_are_visible_to_their_creator_and_admin_only(seeded_db: str) -> None:
    _, writer = create_key(seeded_db, ["recommendations:write"], name="writer")
    _, other = create_key(seeded_db, ["recommendations:write"], name="other")
    with make_client(seeded_db, api_key=writer) as c:
        r = c.post("/v1/recommendations", json=PROFILE)
        assert r.status_code == 201, r.text
        location = r.headers["location"]
        assert c.get(location).json() == r.json()
        r_other = c.get(location, headers={"X-API-Key": other})
        assert r_other.status_code == 404
        assert r_other.json()["type"].endswith(":not-found")
    with make_client(seeded_db) as admin:
        assert admin.get(location).status_code == 200

    async def creator() -> object:
        engine = create_async_engine(Settings(database_url=seeded_db).async_database_url)
        try:
            async with engine.connect() as conn:
                rec_id = location.rsplit("/", 1)[1]
                return (
                    await conn.execute(
                        text(
                            "SELECT k.name FROM recommendations r JOIN api_keys k ON k.id = r.api_key_id "
                            "WHERE r.id = :id"
                        ),
                        {"id": rec_id},
                    )
                ).scalar()
        finally:
            await engine.dispose()

    assert asyncio.run(creator()) == "writer"


# ---- CLI ---------------------------------------------------------------------------------------


@pytest.fixture
def cli_db(databases: Databases, backend: str, monkeypatch: pytest.MonkeyPatch) -> str:
    url = databases.migrated(backend)
    monkeypatch.setenv("DATABASE_URL", url)
    return url


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_keys_create_list_revoke(cli_db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(
        capsys, "keys", "create", "--name", "portal", "--scope", "catalog:read", "--scope", "decisions:run"
    )
    assert code == 0
    key = out.strip().splitlines()[-1]
    assert re.fullmatch(r"ca_[A-Za-z0-9_-]{43}", key)

    code, out, _ = cli(capsys, "keys", "list")
    assert code == 0
    assert "portal" in out and key[:8] in out and "catalog:read decisions:run" in out
    assert key not in out

    with make_client(cli_db, api_key=key, settings=Settings(database_url=cli_db, api_key_cache_seconds=0)) as c:
        assert c.get("/v1/options").status_code == 200
        assert c.get("/v1/audit").status_code == 403
        key_id = next(line.split()[0] for line in out.splitlines() if "portal" in line)
        code, out, _ = cli(capsys, "keys", "revoke", key_id)
        assert code == 0 and "revoked" in out
        assert c.get("/v1/options").status_code == 401

    code, out, _ = cli(capsys, "keys", "list")
    portal = next(line for line in out.splitlines() if "portal" in line)
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+\d{4}-\d\d-\d\d", portal)  # created and revoked
    assert cli(capsys, "keys", "revoke", key_id)[1].startswith(f"API key {key_id} (portal) was already revoked")


def test_cli_keys_refuses_unknown_scopes_and_ids(cli_db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "keys", "create", "--name", "x", "--scope", "root")
    assert code == 2 and "'root' is not one of" in err  # a usage error: exit status 2, as before
    code, _, err = cli(capsys, "keys", "revoke", "999")
    assert code == 2 and "no API key with id 999" in err


def test_cli_keys_dev_creates_once_and_recreates_a_revoked_key(
    cli_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / ".dev-api-key"
    code, out, _ = cli(capsys, "keys", "dev", "--file", str(file))
    assert code == 0
    key = out.strip().splitlines()[-1]
    assert file.read_text().strip() == key
    assert stat.S_IMODE(file.stat().st_mode) == 0o600

    code, out, _ = cli(capsys, "keys", "dev", "--file", str(file))  # still valid: the same key
    assert out.strip().splitlines()[-1] == key

    with make_client(cli_db, api_key=key) as c:
        assert c.get("/v1/audit").status_code == 200  # every scope, admin included

    key_id = next(
        line.split()[0] for line in cli(capsys, "keys", "list")[1].splitlines() if "local development" in line
    )
    cli(capsys, "keys", "revoke", key_id)
    code, out, _ = cli(capsys, "keys", "dev", "--file", str(file))
    new = out.strip().splitlines()[-1]
    assert new != key and file.read_text().strip() == new


# ---- audit -------------------------------------------------------------------------------------


def test_audit_records_seed_loads_and_key_changes_readable_by_admin_only(
    cli_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli(capsys, "seeds", "load", str(SEEDS), "--actor", "alice", "--note", "first load")
    assert code == 0
    version = re.search(r"knowledge version (kv\S+)", out)
    assert version
    assert cli(capsys, "seeds", "load", str(SEEDS), "--actor", "alice")[0] == 0  # no change: no event
    code, out, _ = cli(capsys, "keys", "create", "--name", "reader", "--scope", "catalog:read", "--actor", "bob")
    reader = out.strip().splitlines()[-1]
    key_id = out.split()[3]
    cli(capsys, "keys", "revoke", key_id, "--actor", "carol")

    with make_client(cli_db, api_key=reader) as c:
        assert c.get("/v1/audit").status_code == 401  # revoked
    _, reader2 = create_key(cli_db, ["catalog:read", "decisions:run", "recommendations:write"], name="not admin")
    with make_client(cli_db, api_key=reader2) as c:
        assert c.get("/v1/audit").status_code == 403
    with make_client(cli_db) as admin:
        doc = admin.get("/v1/audit").json()
        only_loads = admin.get("/v1/audit", params={"action": "seeds.load"}).json()
        page = admin.get("/v1/audit", params={"limit": 1, "offset": 1}).json()

    everything = doc["items"]
    assert doc["total"] == 5  # the two keys the test itself made (actor "tests") included
    events = [e for e in everything if e["actor"] != "tests"]
    assert [e["action"] for e in events] == ["key.revoke", "key.create", "seeds.load"]
    load = events[-1]
    assert load["actor"] == "alice"
    assert load["subject"] == "first load"
    assert load["knowledge_version_before"] is None
    assert load["knowledge_version_after"] == version.group(1)
    assert load["detail"]["summary"]["add"] > 0
    assert events[0]["actor"] == "carol" and events[0]["detail"]["key_id"] == int(key_id)
    assert events[1]["actor"] == "bob" and events[1]["detail"]["scopes"] == ["catalog:read"]
    assert events[1]["knowledge_version_before"] == events[1]["knowledge_version_after"] == version.group(1)
    assert reader not in str(doc)
    assert [e["action"] for e in only_loads["items"]] == ["seeds.load"]
    assert page["total"] == 5 and page["items"] == [everything[1]]
    at = [e["at"] for e in everything]
    assert at == sorted(at, reverse=True)


def test_a_data_migration_is_audited_with_versions_before_and_after(empty_db: str) -> None:
    from sqlalchemy.ext.asyncio import async_sessionmaker

    from app.kb import seeds

    load_seeds(empty_db, note="base")

    async def migrate_data() -> tuple[str, list[tuple[object, ...]]]:
        engine = create_async_engine(Settings(database_url=empty_db).async_database_url)
        try:
            async with async_sessionmaker(engine)() as session, session.begin():
                await session.execute(text("UPDATE assumptions SET source = source || ' (checked)'"))
                label = await seeds.record_version(session, "0003: sources checked")
            async with engine.connect() as conn:
                rows = (
                    await conn.execute(
                        text(
                            "SELECT action, actor, subject, knowledge_version_before, knowledge_version_after "
                            "FROM audit_events ORDER BY id"
                        )
                    )
                ).all()
            return label, [tuple(r) for r in rows]
        finally:
            await engine.dispose()

    label, rows = asyncio.run(migrate_data())
    assert [r[0] for r in rows] == ["seeds.load", "migration.data"]
    load, data = rows
    assert load[1] == "system" and load[2] == "base"
    assert data[1:] == ("migration", "0003: sources checked", load[4], label)
