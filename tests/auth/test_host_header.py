"""Issue 24, item 13: the `Host` header is parsed strictly — an RFC 3986 host (a bracketed
IPv6 literal, an IPv4 address or a DNS name) and an optional port — and anything else is
refused with 400 `invalid_host` before the name is even compared. Before, `localhost:P@evil`
counted as `localhost`.

Hypothesis checks the parser against a reference grammar written here, from both sides: no
string outside the grammar is accepted, every string the grammar makes is read right.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.auth.origins import HostHeader, host_allowed, parse_host
from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN
from tests.front_line import FrontLineTestServer, raw_exchange
from tests.own_loop import served_on_own_loop

LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
REFERENCE = re.compile(
    rf"(?:\[(?P<v6>[0-9a-f:.]+)\]|(?P<name>{LABEL}(?:\.{LABEL})*\.?))(?::(?P<port>[0-9]{{1,5}}))?",
    re.IGNORECASE)
MALFORMED = ["localhost:8765@evil.example", "localhost:P@evil.example", "[::1]evil.example",
             " localhost", "localhost ", "local host", "localhost\t", "localhost:",
             "localhost:99999", "localhost:-1", "localhost:+80", "127.0.0.1:80:80", "[::1",
             "::1", "[::1]:", "[::1]:8765x", "[fe80::1%eth0]", "evil.example/", "a..b",
             "-localhost", "localhost-", "user@localhost", "localhost#frag", "localhost?x",
             "\u217cocalhost", "localhost\u3002", "xn--", "", ":8765", "[]", "[v1.x]",
             "127.0.0.1.", "256.0.0.1", "127.1", "a" * 64 + ".example"]


def reference(raw: str) -> HostHeader | None:
    """What the grammar says `raw` is (None: not a Host value)."""
    match = REFERENCE.fullmatch(raw)
    if match is None or not raw.isascii():
        return None
    port = match["port"]
    if port is not None and int(port) > 65535:
        return None
    if match["v6"] is not None:
        try:
            name = str(ipaddress.IPv6Address(match["v6"]))
        except ValueError:
            return None
    else:
        name = match["name"].lower().rstrip(".")
        if len(name) > 253:
            return None
        if re.fullmatch(r"[0-9.]+", name):  # all digits and dots: only a dotted quad
            try:
                name = str(ipaddress.IPv4Address(name))
            except ValueError:
                return None
            if match["name"].endswith("."):
                return None
    return HostHeader(name, int(port) if port is not None else None)


HOST_CHARS = st.sampled_from(list("abcxyzAZ019-_.:[]@ %/\t#?") + ["\u00e9", "\u3002", "\x00"])
names = st.from_regex(rf"\A{LABEL}(\.{LABEL}){{0,3}}\.?\Z", fullmatch=True).filter(
    lambda n: not re.fullmatch(r"[0-9.]+", n))
ipv4 = st.ip_addresses(v=4).map(str)
ipv6 = st.ip_addresses(v=6).map(lambda a: f"[{a}]")
ports = st.none() | st.integers(0, 65535)
valid_hosts = st.tuples(names | ipv4 | ipv6, ports).map(
    lambda hp: hp[0] if hp[1] is None else f"{hp[0]}:{hp[1]}")


class TestTheParser:
    @given(st.text(HOST_CHARS, max_size=30) | st.text(max_size=30))
    def test_nothing_outside_the_grammar_is_accepted(self, raw):
        assert parse_host(raw) == reference(raw)

    @given(valid_hosts)
    def test_every_host_of_the_grammar_is_read_right(self, raw):
        parsed = parse_host(raw)
        assert parsed is not None and parsed == reference(raw)

    @pytest.mark.parametrize("raw", MALFORMED)
    def test_the_known_tricks_are_refused(self, raw):
        assert parse_host(raw) is None

    @pytest.mark.parametrize("raw, name, port", [
        ("localhost", "localhost", None), ("LOCALHOST.:8765", "localhost", 8765),
        ("[::1]:8765", "::1", 8765), ("[0:0::1]", "::1", None),
        ("127.0.0.1:80", "127.0.0.1", 80), ("nova.lan", "nova.lan", None)])
    def test_good_values(self, raw, name, port):
        assert parse_host(raw) == HostHeader(name, port)

    def test_names_are_compared_after_parsing(self):
        assert host_allowed(parse_host("LOCALHOST.:1"), "127.0.0.1", None)
        assert host_allowed(parse_host("nova.example.org"), "127.0.0.1",
                            "https://nova.example.org")
        assert host_allowed(parse_host("192.168.1.20:8765"), "0.0.0.0", None)
        assert not host_allowed(parse_host("0x7f.0.0.1"), "0.0.0.0", None)
        assert not host_allowed(parse_host("localhost.evil.example"), "127.0.0.1", None)


def raw_request(port: int, host_lines: list[bytes]) -> tuple[int, bytes]:
    """A request with exactly these Host lines (none, one, several)."""
    tail = f"Authorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n".encode()
    status, _, body = raw_exchange(port, b"GET /api/me HTTP/1.1\r\n" + b"".join(host_lines)
                                   + tail)
    return status, body


class TestOverHttp:
    @pytest.mark.parametrize("raw", ["localhost:8765@evil.example", "[::1]evil.example",
                                     "localhost:99999", "127.0.0.1:80:80", "::1"])
    async def test_a_malformed_host_is_400(self, client, raw):
        response = await client.get("/api/me", headers={**AUTH, "Host": raw})
        assert response.status == 400, raw
        assert (await response.json())["error"]["code"] == "invalid_host"

    async def test_raw_values_a_client_library_would_not_send(self, aiohttp_client, settings):
        client = await aiohttp_client(FrontLineTestServer(create_app(settings,
                                                                     local_token=TOKEN)))
        port = client.port
        loop = asyncio.get_running_loop()
        for lines, code in (([b"Host: localhost:1@evil.example\r\n"], b"invalid_host"),
                            ([b"Host: lo\tcalhost\r\n"], b"invalid_host"),
                            # aiohttp's parser refuses these itself: the front line answers
                            # them in the error shape too (issue 24, item 12)
                            ([], b"invalid_request"),
                            ([b"Host: localhost\r\n", b"Host: evil.example\r\n"],
                             b"invalid_request")):
            status, body = await loop.run_in_executor(None, raw_request, port, lines)
            assert status == 400, lines
            assert json.loads(body)["error"]["code"] == code.decode(), (lines, body)
        status, _ = await loop.run_in_executor(
            None, raw_request, port, [b"Host: localhost\r\n"])
        assert status == 200

    @pytest.mark.parametrize("target, status", [
        (b"http://evil.example/api/me", 400), (b"http://localhost:1@evil.example/api/me", 400),
        (b"*", 400), (b"http://localhost/api/me", 200)])
    async def test_a_target_that_is_no_path_must_name_the_same_host(self, client, target,
                                                                    status):
        loop = asyncio.get_running_loop()
        code, _, body = await loop.run_in_executor(None, raw_exchange, client.port, (
            b"GET " + target + b" HTTP/1.1\r\nHost: localhost\r\n"
            + f"Authorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n".encode()))
        assert code == status, body


# --- over the wire, values hypothesis draws (issue 24, item 13) -------------------------------

PUBLIC = "https://nova.example.org"
# What an attacker puts after or around a name this server answers for.
TRICKS = st.sampled_from(["@evil.example", ":1@evil.example", "evil.example", ".evil.example",
                          ":", ":99999", ":80:80", "/", "#", "?x", "%00", "\\", "\u3002",
                          "\u00e9", "\x00", "\x7f", " x", "\tx", ",evil.example"])
OWN_NAMES = st.sampled_from(["localhost", "127.0.0.1", "[::1]", "nova.example.org",
                             "LOCALHOST.", "localhost:8765"])
WIRE_HOSTS = (OWN_NAMES
              | st.tuples(OWN_NAMES, TRICKS).map("".join)
              | st.tuples(TRICKS, OWN_NAMES).map("".join)
              | valid_hosts
              | st.text(HOST_CHARS, min_size=1, max_size=30).filter(lambda v: "\x00" not in v))


def wire_expected(value: str) -> set[int]:
    """The statuses a request with `Host: value` may get: 200 for a host this server answers
    for, 421 for a well-formed foreign one, 400 for anything else."""
    parsed = parse_host(value.strip(" \t"))  # optional whitespace is no part of a field value
    if parsed is None:
        return {400}
    return {200} if host_allowed(parsed, "127.0.0.1", PUBLIC) else {421}


@pytest.fixture
def wire(make_settings):
    """The app behind the CLI's front line (hypothesis drives it example by example)."""
    app = create_app(make_settings(public_origin=PUBLIC), local_token=TOKEN)
    with served_on_own_loop(app, FrontLineTestServer) as (loop, client):
        yield loop, client.port


def test_hostile_host_values_get_400_or_421_never_the_app(wire):
    """Whatever the Host line carries, only a host this server answers for reaches the app;
    a malformed one is 400 in the error shape, a foreign one 421. Nothing is echoed."""
    from hypothesis import HealthCheck, event
    from hypothesis import settings as hypothesis_settings

    loop, port = wire

    @hypothesis_settings(max_examples=120, deadline=None,
                         suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(WIRE_HOSTS)
    def probe(value: str) -> None:
        request = (b"GET /api/me HTTP/1.1\r\nHost: " + value.encode("utf-8")
                   + f"\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n".encode())
        status, headers, body = loop.run_until_complete(
            loop.run_in_executor(None, raw_exchange, port, request))
        event(f"status {status}")
        assert status in wire_expected(value), (value, status, body[:200])
        if status != 200:
            error = json.loads(body)["error"]
            assert set(error) == {"code", "message"}
            assert error["code"] in {"invalid_host", "invalid_request", "misdirected_request"}
            assert "evil" not in body.decode(errors="replace"), (value, body)
            assert headers.get("server") == "Novaberg"

    probe()
