"""A start against an external Redis that others can reach without a password warns in one
line (issue 38 item 9; docs/deploy.md): off this machine and no password in the URL. A unix
socket and the loopback addresses are this machine's own."""

from __future__ import annotations

import logging

import pytest

from app.storage.redis_driver import unprotected_remote
from app.wiring.server import warn_of_open_redis


@pytest.mark.parametrize("url", [
    "redis://10.0.0.5:6379/0",
    "redis://redis:6379/0",  # a compose service's name
    "redis://Redis.Example.org",
    "rediss://redis.example.org:6380/0",  # TLS hides the traffic, it lets anyone in
    "redis://novaberg@10.0.0.5:6379",  # an ACL user name alone is no password
    "redis://novaberg:@10.0.0.5:6379",  # nor an empty one
    "redis://[fd00::5]:6379",
    "redis://128.0.0.1",  # next to 127.0.0.0/8, not in it
    "redis://localhost.example.org",
])
def test_a_remote_redis_without_a_password_is_unprotected(url):
    assert unprotected_remote(url)


@pytest.mark.parametrize("url", [
    "redis://:secret@10.0.0.5:6379/0",
    "redis://novaberg:secret@redis.example.org:6379/0",
    "rediss://novaberg:secret@redis.example.org:6380/0",
    "redis://10.0.0.5:6379/0?password=secret",
    "redis://localhost:6379/0",
    "redis://LOCALHOST",
    "redis://127.0.0.1:6379",
    "redis://127.8.9.10:6379",  # all of 127.0.0.0/8
    "redis://[::1]:6379",
    "redis://",  # redis-py's default host: localhost
    "unix:///run/redis/redis.sock",
    "unix:///run/redis/redis.sock?db=2",
])
def test_a_password_a_loopback_host_or_a_socket_is_not(url):
    assert not unprotected_remote(url)


def test_the_start_warns_in_one_line_without_the_password(caplog):
    with caplog.at_level(logging.WARNING, logger="app.wiring.server"):
        warn_of_open_redis("redis://10.0.0.5:6379/0")
        warn_of_open_redis("redis://:secret@10.0.0.5:6379/0")
        warn_of_open_redis("unix:///run/redis/redis.sock")
        warn_of_open_redis(None)  # the embedded Redis
    warned = [r for r in caplog.records if r.name == "app.wiring.server"]
    assert len(warned) == 1 and warned[0].levelno == logging.WARNING
    assert "without a password" in warned[0].getMessage()
    assert warned[0].fields == {"redis_url": "redis://10.0.0.5:6379/0"}
