"""The client address's budgets: an IPv6 client is budgeted by its /64, and guesses (made-up keys, no
key) are counted apart from valid keys' first requests, so that guessing from behind a NAT cannot lock
out a valid key the worker has not verified yet — while a flood of made-up keys past its budget still
never reaches the database."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from conftest import Databases, create_key, make_client
from test_rate_limits import OPTIONS, _verifier, assert_429, limited

from app.cli import main
from app.settings import parse_trusted_proxies
from app.web.known_keys import KnownKeys
from app.web.rate_limits import budget_address


@pytest.fixture
def db(databases: Databases) -> str:
    return databases.seeded("sqlite")


def trusting(db: str) -> Any:
    return limited(db, forwarded_allow_ips=parse_trusted_proxies("*"))


def counted_lookups(client: Any) -> list[str]:
    """The keys the app looks up in the database from now on."""
    verifier = _verifier(client)
    real = verifier._lookup
    lookups: list[str] = []

    async def counting(key: str) -> Any:
        lookups.append(key)
        return await real(key)

    verifier._lookup = counting
    return lookups


# ---- IPv6: a /64 is one client ---------------------------------------------------------------------


def test_the_budgeted_part_of_an_address() -> None:
    assert budget_address("2001:db8:1:2:aaaa:bbbb:cccc:dddd") == "2001:db8:1:2::/64"
    assert budget_address("2001:db8:1:2::1") == budget_address("2001:DB8:1:2:ffff::9") == "2001:db8:1:2::/64"
    assert budget_address("2001:db8:1:3::1") == "2001:db8:1:3::/64"
    assert budget_address("::ffff:192.0.2.7") == "192.0.2.7"  # an IPv4 client seen through IPv6
    assert budget_address("192.0.2.7") == "192.0.2.7" != budget_address("192.0.2.8")  # IPv4: the address
    assert budget_address("testclient") == "testclient"


def test_rotating_ipv6_addresses_in_one_64_through_a_trusted_proxy_share_one_budget(db: str) -> None:
    with make_client(db, api_key=None, settings=trusting(db)) as c:
        for i in range(3):
            r = c.get(OPTIONS, headers={"X-Forwarded-For": f"2001:db8:1:2::{i + 1:x}"})
            assert r.status_code == 401, r.text
        for i in range(3, 8):  # a fresh /128 each time: the same /64, the same budget
            assert_429(c.get(OPTIONS, headers={"X-Forwarded-For": f"2001:db8:1:2:{i:x}::{i:x}"}))
        # another /64 is another client; IPv4 clients stay one budget per address
        assert c.get(OPTIONS, headers={"X-Forwarded-For": "2001:db8:1:3::1"}).status_code == 401
        for _ in range(3):
            assert c.get(OPTIONS, headers={"X-Forwarded-For": "198.51.100.1"}).status_code == 401
        assert_429(c.get(OPTIONS, headers={"X-Forwarded-For": "198.51.100.1"}))
        assert c.get(OPTIONS, headers={"X-Forwarded-For": "198.51.100.2"}).status_code == 401


# ---- guesses and valid keys' first requests ----------------------------------------------------------


def test_spent_guesses_do_not_lock_out_a_valid_key_from_the_same_address(db: str) -> None:
    _, valid = create_key(db, ["catalog:read"], name="behind the NAT")
    with make_client(db, api_key=None, settings=limited(db)) as c:
        lookups = counted_lookups(c)
        for i in range(3):
            assert c.get(OPTIONS, headers={"X-API-Key": f"ca_guess_{i}"}).status_code == 401
        assert len(lookups) == 3  # within the guesses budget, a made-up key is looked up (and refused)
        for i in range(3, 20):
            assert_429(c.get(OPTIONS, headers={"X-API-Key": f"ca_guess_{i}"}))
        assert_429(c.get(OPTIONS))  # no key at all: a guess too
        assert len(lookups) == 3  # past it, no made-up key reaches the database
        # a valid key this worker has not verified yet, from the same address: served
        r = c.get(OPTIONS, headers={"X-API-Key": valid})
        assert r.status_code == 200, r.text
        assert r.headers["ratelimit-remaining"] == "2"  # its key's budget
        for _ in range(2):
            assert c.get(OPTIONS, headers={"X-API-Key": valid}).status_code == 200
        assert_429(c.get(OPTIONS, headers={"X-API-Key": "ca_guess_again"}))  # guesses stay refused


def test_valid_keys_first_requests_have_a_budget_of_their_own(db: str) -> None:
    fresh = [create_key(db, ["catalog:read"], name=f"first {i}")[1] for i in range(5)]
    with make_client(db, api_key=None, settings=limited(db)) as c:
        for key in fresh[:3]:
            assert c.get(OPTIONS, headers={"X-API-Key": key}).status_code == 200
        # a fourth key never seen by this worker, from the same address: its known-keys budget is spent
        assert_429(c.get(OPTIONS, headers={"X-API-Key": fresh[3]}))
        # …while guesses still have theirs, and the verified keys are charged to themselves alone
        assert c.get(OPTIONS, headers={"X-API-Key": "ca_guess"}).status_code == 401
        assert c.get(OPTIONS, headers={"X-API-Key": fresh[0]}).status_code == 200


def test_a_known_key_refused_by_its_lookup_counts_as_a_guess(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    key_id, revoked = create_key(db, ["catalog:read"], name="revoked after the read")
    monkeypatch.setenv("DATABASE_URL", db)
    with make_client(db, api_key=None, settings=limited(db)) as c:
        assert c.get(OPTIONS, headers={"X-API-Key": "ca_guess_0"}).status_code == 401  # the set is read
        assert main(["keys", "revoke", str(key_id)]) == 0  # still among the digests this worker read
        lookups = counted_lookups(c)
        assert c.get(OPTIONS, headers={"X-API-Key": revoked}).status_code == 401  # looked up, refused
        assert lookups == [revoked]
        # that cost a guess: one made-up key more, and the guesses budget (3) is spent
        assert c.get(OPTIONS, headers={"X-API-Key": "ca_guess_1"}).status_code == 401
        assert_429(c.get(OPTIONS, headers={"X-API-Key": "ca_guess_2"}))
        # and the revoked key is a guess now: refused without a lookup
        assert_429(c.get(OPTIONS, headers={"X-API-Key": revoked}))
        assert lookups == [revoked, "ca_guess_1"]


def test_a_key_created_since_the_last_read_is_a_guess_until_the_next(db: str) -> None:
    """The documented trade-off: with the guesses budget spent, a key made after the worker read the
    active keys waits for the next read (``KNOWN_KEYS_REFRESH_SECONDS``; shortened here)."""
    with make_client(db, api_key=None, settings=limited(db)) as c:
        for i in range(3):
            assert c.get(OPTIONS, headers={"X-API-Key": f"ca_guess_{i}"}).status_code == 401
        _, late = create_key(db, ["catalog:read"], name="created after the read")
        assert_429(c.get(OPTIONS, headers={"X-API-Key": late}))
        known = _verifier(c).known
        assert isinstance(known, KnownKeys)
        known.refresh_seconds = 0.05
        deadline = time.monotonic() + 20
        while (r := c.get(OPTIONS, headers={"X-API-Key": late})).status_code == 429:  # read again behind
            assert time.monotonic() < deadline, "the active keys were never read again"
            time.sleep(0.1)
        assert r.status_code == 200, r.text


# ---- the set of active keys ------------------------------------------------------------------------


def test_the_active_keys_are_read_once_for_concurrent_callers_and_again_when_stale() -> None:
    reads: list[float] = []
    now = [0.0]
    release = asyncio.Event()

    async def load() -> dict[str, Any]:
        reads.append(now[0])
        await release.wait()
        return {"a" * 64: None}

    async def run() -> None:
        known = KnownKeys(load, refresh_seconds=10, clock=lambda: now[0])
        waiting = [asyncio.ensure_future(known.contains("a" * 64)) for _ in range(20)]
        await asyncio.sleep(0)
        release.set()
        assert await asyncio.gather(*waiting) == [True] * 20
        assert reads == [0.0]  # one read for all of them
        now[0] = 11.0
        release.clear()
        assert await asyncio.wait_for(known.contains("b" * 64), 1) is False  # stale: answered at once…
        assert reads == [0.0, 11.0]  # …and read again behind the answer
        known.add("b" * 64, None)  # a lookup confirms a key while the read runs: it stays
        release.set()
        for _ in range(5):
            await asyncio.sleep(0)
        assert await known.contains("b" * 64) and await known.contains("a" * 64)

    asyncio.run(run())


def test_a_failed_read_is_retried_and_says_nothing_of_any_key() -> None:
    now = [0.0]
    result: list[Any] = [ConnectionRefusedError("database down")]

    async def load() -> dict[str, Any]:
        if isinstance(result[0], Exception):
            raise result[0]
        return dict(result[0])

    async def run() -> None:
        known = KnownKeys(load, clock=lambda: now[0])
        assert await known.contains("a" * 64) is False and not known.loaded
        result[0] = {"a" * 64: None}
        assert await known.contains("a" * 64) is False  # within the retry interval: not read again
        now[0] = 2.0
        assert await known.contains("a" * 64) is True

    asyncio.run(run())
