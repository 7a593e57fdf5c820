"""Issue 24, item 9: a desktop start code opens one browser session within its lifetime
(`START_CODE_SECONDS`, 10 minutes) and never after; at most `MAX_START_CODES` are outstanding.
The clock is the codes' own (monotonic) and is moved here instead of waiting."""

from __future__ import annotations

from app.api.app_keys import AUTH
from app.api.middleware import SESSION_COOKIE
from app.auth.credentials import MAX_START_CODES, START_CODE_SECONDS, StartCodes


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class TestLifetime:
    def test_a_code_works_within_its_lifetime_once(self):
        clock = Clock()
        codes = StartCodes(clock=clock)
        code = codes.issue()
        clock.now += START_CODE_SECONDS - 1
        assert codes.redeem(code) is True
        assert codes.redeem(code) is False

    def test_a_code_older_than_its_lifetime_opens_nothing(self, caplog):
        clock = Clock()
        codes = StartCodes(clock=clock)
        code = codes.issue()
        clock.now += START_CODE_SECONDS + 1
        assert codes.redeem(code) is False
        [expired] = [r for r in caplog.records if r.getMessage() == "start links expired unused"]
        assert expired.fields["limit"] == "START_CODE_SECONDS" and expired.fields["count"] == 1
        clock.now -= 2  # and it is gone for good, not just refused for now
        assert codes.redeem(code) is False

    def test_the_lifetime_is_ten_minutes(self):
        assert START_CODE_SECONDS == 600


class TestCap:
    def test_at_most_max_start_codes_are_outstanding_the_oldest_go_first(self, caplog):
        codes = StartCodes(clock=Clock())
        issued = [codes.issue() for _ in range(MAX_START_CODES + 4)]
        assert len(codes) == MAX_START_CODES
        dropped = [r for r in caplog.records if r.getMessage().startswith("oldest start link")]
        assert len(dropped) == 4 and dropped[0].fields["limit"] == "MAX_START_CODES"
        assert [codes.redeem(c) for c in issued[:4]] == [False] * 4
        assert all(codes.redeem(c) for c in issued[4:])

    def test_expired_codes_do_not_count_against_the_cap(self):
        clock = Clock()
        codes = StartCodes(clock=clock)
        for _ in range(MAX_START_CODES):
            codes.issue()
        clock.now += START_CODE_SECONDS + 1
        fresh = codes.issue()
        assert len(codes) == 1 and codes.redeem(fresh)


async def test_an_expired_start_link_is_refused_over_http(client):
    codes = client.app[AUTH].start_codes
    clock = Clock()
    codes.clock = clock
    code = codes.issue()
    clock.now += START_CODE_SECONDS + 1
    response = await client.get(f"/?token={code}", allow_redirects=False)
    assert response.status == 401
    assert (await response.json())["error"]["code"] == "invalid_start_link"
    assert SESSION_COOKIE not in response.cookies
    fresh = codes.issue()
    assert (await client.get(f"/?token={fresh}", allow_redirects=False)).status == 302
