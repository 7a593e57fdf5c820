"""Issue 24, item 3: nobody can lock a user out by guessing at their name.

The login throttle counts failures per (name, address) and per address; both refuse with 429
once they bite. The name alone, failed from many addresses, only slows a try (at most
`login_name_max_delay_seconds`) and never refuses the right password from an address that
has not failed. Tests call the app's real `Auth` (real Redis, real SQLite) with the client
address a request would carry, so that several addresses can be played.
"""

from __future__ import annotations

import asyncio
import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.api.app_keys import AUTH, REDIS
from app.auth.credentials import LoginBackoff
from app.memory import keys
from app.wiring.server import create_app
from tests.accounts import PASSWORD, add_user

ATTACKER = "203.0.113.66"
ANNA_AT_HOME = "198.51.100.7"


@pytest.fixture
def anna(settings):
    return add_user(settings)


@pytest.fixture
async def server(aiohttp_client, make_settings, anna):
    """A headless app; the name's slow-down capped at 1 s so that tests stay short."""
    return await aiohttp_client(create_app(make_settings(
        headless=True, login_free_failures=3, login_client_free_failures=6,
        login_name_max_delay_seconds=1)))


async def try_login(server, name: str, password: str, client: str) -> str | None:
    return await server.app[AUTH].login(name, password, client)


async def fail_from_many_addresses(server, name: str, count: int) -> None:
    """`count` wrong guesses at `name`, each from an address of its own (a botnet, or one
    guess every 15 minutes from addresses that rotate); sent at once, so that the name's
    slow-down (1 s here) is waited out once, not per guess."""
    results = await asyncio.gather(
        *(try_login(server, name, f"guess-{i}", f"192.0.2.{i}") for i in range(count)),
        return_exceptions=True)
    refused = [r for r in results if isinstance(r, BaseException)]
    assert not refused, f"an address that never failed was refused: {refused[:1]}"
    assert results == [None] * count


class TestTheNameAloneNeverLocksOut:
    async def test_the_right_password_from_a_clean_address_gets_in(self, server, caplog):
        caplog.set_level(logging.WARNING)
        await fail_from_many_addresses(server, "anna", 40)
        await server.app[AUTH].throttle.attempt("anna", "192.0.2.250")  # one more, just now
        caplog.clear()
        delay = await server.app[AUTH].throttle.attempt("anna", ANNA_AT_HOME)
        assert 0 < delay <= 1  # slowed at most by the cap (1 s here), not refused
        assert await try_login(server, "anna", PASSWORD, ANNA_AT_HOME) == "anna"
        slowed = [r for r in caplog.records if r.getMessage().startswith("login slowed")]
        assert slowed and slowed[0].fields["setting"] == "login_name_max_delay_seconds"
        assert all(r.fields["delay_s"] <= 1 for r in slowed)

    async def test_the_names_wait_is_capped_however_often_it_failed(self, server):
        await fail_from_many_addresses(server, "anna", 60)
        delay = await server.app[AUTH].throttle.attempt("anna", "192.0.2.250")
        wait_ms = await server.app[REDIS].pttl(keys.login_blocked("name", "anna"))
        assert 0 < wait_ms <= 1000 and delay <= 1

    async def test_the_default_cap_is_at_most_thirty_seconds(self, make_settings):
        from app.core.settings import SETTINGS_BY_NAME

        setting = SETTINGS_BY_NAME["login_name_max_delay_seconds"]
        assert setting.default <= 30 and setting.maximum <= 30

    async def test_her_success_ends_the_names_slow_down(self, server):
        await fail_from_many_addresses(server, "anna", 10)
        assert await try_login(server, "anna", PASSWORD, ANNA_AT_HOME) == "anna"
        redis = server.app[REDIS]
        assert await redis.exists(keys.login_blocked("name", "anna")) == 0
        assert await server.app[AUTH].throttle.attempt("anna", "198.51.100.8") == 0


class TestTheAttackersAddressIsThrottled:
    async def test_name_and_address_refuse_even_the_right_password(self, server):
        for i in range(3):
            assert await try_login(server, "anna", f"guess-{i}", ATTACKER) is None
        with pytest.raises(LoginBackoff) as refused:
            await try_login(server, "anna", PASSWORD, ATTACKER)
        assert refused.value.retry_after >= 1
        # Anna, elsewhere, is not refused.
        assert await try_login(server, "anna", PASSWORD, ANNA_AT_HOME) == "anna"

    async def test_the_address_is_throttled_across_names(self, server):
        for i in range(6):
            assert await try_login(server, f"nobody{i}", "x" * 12, ATTACKER) is None
        with pytest.raises(LoginBackoff):
            await try_login(server, "someone-else", "x" * 12, ATTACKER)
        assert await try_login(server, "anna", PASSWORD, ANNA_AT_HOME) == "anna"

    async def test_concurrent_guesses_from_one_address_are_counted_before_they_are_checked(
            self, server):
        """A burst of guesses at once gets no more tries than one after the other."""
        results = await asyncio.gather(
            *(try_login(server, "anna", f"burst-{i}", ATTACKER) for i in range(20)),
            return_exceptions=True)
        checked = [r for r in results if not isinstance(r, LoginBackoff)]
        assert all(r is None for r in checked)
        assert len(checked) <= 3

    async def test_a_success_does_not_reset_the_addresss_count(self, server):
        """A guesser who owns an account cannot clear the count of their address."""
        for i in range(5):
            assert await try_login(server, f"nobody{i}", "x" * 12, ATTACKER) is None
        assert await try_login(server, "anna", PASSWORD, ATTACKER) == "anna"
        assert await try_login(server, "nobody9", "x" * 12, ATTACKER) is None
        with pytest.raises(LoginBackoff):
            await try_login(server, "nobody10", "x" * 12, ATTACKER)


async def test_over_http_a_name_under_attack_still_logs_in(server):
    await fail_from_many_addresses(server, "anna", 30)
    response = await server.post("/api/login", json={"name": "anna", "password": PASSWORD})
    assert response.status == 200


# --- any sequence of attempts (hypothesis) ----------------------------------------------------

FREE, ADDRESS_FREE, NAME_CAP = 3, 6, 1
ATTEMPTS = st.lists(st.tuples(st.sampled_from(["anna", "bob", "ghost"]),
                              st.sampled_from(["a1", "a2", "a3"]),
                              st.booleans()),  # True: the right password (a success)
                    max_size=40)


@pytest.fixture
def throttle_loop(session_redis):
    """A LoginThrottle on a database of the session's Redis, on a loop of this test's own
    (hypothesis drives it example by example)."""
    import redis.asyncio as aioredis

    from app.auth.credentials import LoginThrottle

    loop = asyncio.new_event_loop()
    redis = aioredis.Redis.from_url(session_redis.url("throttle-property"))
    throttle = LoginThrottle(redis, FREE, 900, address_free_failures=ADDRESS_FREE,
                             name_max_delay=NAME_CAP)
    try:
        yield loop, throttle
    finally:
        loop.run_until_complete(redis.aclose())
        loop.close()


def test_no_sequence_of_attempts_locks_a_name_out_of_a_clean_address(throttle_loop):
    """Whatever was tried from the attacker's addresses — wrong guesses, his own successful
    logins between them — a refusal is always earned by its (name, address) or its address
    failing often enough, and a try of any name from an address that has not failed is never
    refused and waits at most the name's cap."""
    from hypothesis import HealthCheck
    from hypothesis import settings as hypothesis_settings

    loop, throttle = throttle_loop
    examples = iter(range(1_000_000))

    @hypothesis_settings(max_examples=60, deadline=None,
                         suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(ATTEMPTS)
    def run(attempts) -> None:
        run_id = next(examples)  # fresh names and addresses: no state from other examples
        pair: dict[tuple[str, str], int] = {}
        address: dict[str, int] = {}

        async def play() -> None:
            for name, where, right in attempts:
                name, where = f"{name}-{run_id}", f"{where}-{run_id}"
                before = (pair.get((name, where), 0), address.get(where, 0))
                try:
                    await throttle.attempt(name, where)
                except LoginBackoff:
                    assert before[0] >= FREE or before[1] >= ADDRESS_FREE, (name, where, before)
                    continue
                pair[(name, where)] = before[0] + 1
                address[where] = before[1] + 1
                if right:
                    await throttle.succeeded(name, where)
                    pair[(name, where)] = 0
                    address[where] -= 1
                else:
                    await throttle.failed(name, where)
            for name in ("anna", "bob", "ghost"):
                delay = await throttle.attempt(f"{name}-{run_id}", f"clean-{run_id}")
                assert 0 <= delay <= NAME_CAP

        loop.run_until_complete(play())

    run()


class TestAnIPv6ClientIsItsPrefix:
    """An IPv6 host gets a /64: each guess from an address of its own would never add up."""

    async def test_guesses_from_one_prefix_count_together(self, server):
        for i in range(3):
            assert await try_login(server, "anna", f"guess-{i}", f"2001:db8:1:2::{i + 1:x}") is None
        with pytest.raises(LoginBackoff):
            await try_login(server, "anna", PASSWORD, "2001:db8:1:2:ffff:ffff:ffff:ffff")
        # Another /64 (another household) is not the guesser.
        assert await try_login(server, "anna", PASSWORD, "2001:db8:1:3::1") == "anna"

    async def test_the_address_count_spans_the_prefix_across_names(self, server):
        for i in range(6):
            assert await try_login(server, f"nobody{i}", "x" * 12, f"2001:db8::{i + 1:x}") is None
        with pytest.raises(LoginBackoff):
            await try_login(server, "someone-else", "x" * 12, "2001:db8::abcd")

    def test_keys(self):
        from app.auth.credentials import client_key

        assert client_key("2001:db8:1:2:3:4:5:6") == "2001:db8:1:2::/64"
        assert client_key("2001:DB8:1:2::9") == "2001:db8:1:2::/64"
        assert client_key("fe80::1%eth0") == "fe80::/64"
        assert client_key("::ffff:192.0.2.7") == "192.0.2.7"
        assert client_key("192.0.2.7") == "192.0.2.7"
        assert client_key("-") == "-"
