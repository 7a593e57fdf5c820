"""Issue 11, item 7: `PUT /api/llm` refuses credentials in the URL and malformed hosts and
ports (400, not 500), drops a stored key when the server changes, writes a config.toml the
next start can read, and says when a saved server does not answer."""

from __future__ import annotations

import pytest

from app.core.settings import load_settings
from tests.conftest import AUTH

KEY = "sk-test-0123456789abcdef"


@pytest.mark.parametrize("url, code", [
    ("http://user:secret@127.0.0.1:8080", "url_has_credentials"),
    ("http://token@127.0.0.1:8080", "url_has_credentials"),
    ("http://127.0.0.1:99999", "invalid_url"),
    ("http://127.0.0.1:0", "invalid_url"),
    ("http://[::1", "invalid_url"),
    ("http://[not-an-ip]:8080", "invalid_url"),
    ("http://127.0.0.1:port", "invalid_url"),
])
async def test_bad_urls_are_400_and_change_nothing(client, settings, url, code):
    for path, method in (("/api/llm", client.put), ("/api/llm/test", client.post)):
        response = await method(path, headers=AUTH, json={"provider": "openai", "url": url})
        assert response.status == 400, (path, await response.text())
        assert (await response.json())["error"]["code"] == code
    assert not (settings.data_path / "config.toml").exists()
    info = await (await client.get("/api/llm", headers=AUTH)).json()
    assert "secret" not in str(info) and info["offline"] is True


async def test_ipv6_literal_is_accepted(client, settings):
    response = await client.put("/api/llm", headers=AUTH, json={
        "provider": "openai", "url": "http://[::1]:9", "model": "m"})
    assert response.status == 200
    assert (await response.json())["url"] == "http://[::1]:9"


async def test_the_key_is_dropped_when_the_server_changes(client, settings, fake_model):
    await client.put("/api/llm", headers=AUTH, json={
        "provider": "openai", "url": fake_model.url, "model": "fake", "api_key": KEY})
    same = await client.put("/api/llm", headers=AUTH, json={
        "provider": "openai", "url": fake_model.url, "model": "other"})
    assert (await same.json())["api_key"] == "set"  # same server: kept
    moved = await client.put("/api/llm", headers=AUTH, json={
        "provider": "openai", "url": "http://127.0.0.1:9", "model": "fake"})
    assert (await moved.json())["api_key"] is None
    assert KEY not in (settings.data_path / "secrets.toml").read_text()
    with_new = await client.put("/api/llm", headers=AUTH, json={
        "provider": "openai", "url": fake_model.url, "model": "fake", "api_key": "sk-new"})
    assert (await with_new.json())["api_key"] == "set"


async def test_control_characters_do_not_break_the_next_start(client, settings):
    response = await client.put("/api/llm", headers=AUTH, json={
        "provider": "openai", "url": "http://127.0.0.1:9", "model": "a\x7fb\x01c\u2028d"})
    assert response.status == 200
    reloaded = load_settings({"data_dir": str(settings.data_path)}, env={})
    assert reloaded.llm_model == "a\x7fb\x01c\u2028d"


async def test_a_saved_server_that_does_not_answer_is_named_with_its_cause(client):
    response = await client.put("/api/llm", headers=AUTH, json={
        "provider": "openai", "url": "http://127.0.0.1:9", "model": "m"})
    assert response.status == 200
    info = await response.json()
    assert info["provider"] == "openai"  # saved all the same
    assert info["warning"]["code"] == "model_unavailable", info["warning"]


async def test_a_saved_server_that_answers_has_no_warning(client, fake_model):
    response = await client.put("/api/llm", headers=AUTH, json={
        "provider": "openai", "url": fake_model.url, "model": "fake"})
    assert (await response.json())["warning"] is None
