"""`PUT /api/llm`: the settings panel chooses the model; the choice is kept for the next start
(config.toml, the key in a 0600 secrets.toml), applied at once, and the key never comes back."""

from __future__ import annotations

import stat

import pytest

from app.api.app_keys import GATEWAY, SETTINGS
from app.api.llm_settings import update_toml_lines
from app.core.settings import load_settings
from app.wiring.server import create_app
from tests.accounts import add_user
from tests.conftest import AUTH, TOKEN

KEY = "sk-test-0123456789abcdef"


async def test_switching_to_a_server_is_kept_and_applied_at_once(client, fake_model, settings):
    at_start = settings.values()
    before = await (await client.get("/api/llm", headers=AUTH)).json()
    assert before["offline"] is True

    response = await client.put("/api/llm", headers=AUTH, json={
        "provider": "openai", "url": fake_model.url, "model": "fake", "api_key": KEY})

    assert response.status == 200
    info = await response.json()
    assert info["provider"] == "openai" and info["model"] == "fake" and info["offline"] is False
    assert info["url"] == fake_model.url and info["api_key"] == "set"
    assert KEY not in await response.text()
    again = await client.get("/api/llm", headers=AUTH)
    assert KEY not in await again.text() and (await again.json())["provider"] == "openai"
    health = await (await client.get("/api/health", headers=AUTH)).json()
    assert health["llm"]["provider"] == "openai"
    # The gateway owns the choice; the settings in force at start stay as they were.
    chosen = client.app[GATEWAY].choice
    assert (chosen.llm_provider, chosen.llm_url, chosen.llm_model) == (
        "openai", fake_model.url, "fake")
    assert chosen.llm_api_key == KEY and KEY not in repr(chosen)
    assert client.app[SETTINGS].values() == at_start and client.app[SETTINGS].llm_api_key is None

    # Kept where the next start reads it: the key only in the owner-only secrets file.
    data = settings.data_path
    assert KEY not in (data / "config.toml").read_text()
    assert stat.S_IMODE((data / "secrets.toml").stat().st_mode) == 0o600
    reloaded = load_settings({"data_dir": str(data)}, env={})
    assert (reloaded.llm_provider, reloaded.llm_url, reloaded.llm_model) == (
        "openai", fake_model.url, "fake")
    assert reloaded.llm_api_key == KEY and reloaded.source("llm_api_key") == "secrets.toml"

    # The key goes to the chosen server.
    sent = await client.post("/api/characters/nova/messages", headers=AUTH, json={"text": "hi"})
    assert sent.status == 202
    chats = await fake_model.wait_requests(1, timeout=10)
    assert chats[0].headers.get("Authorization") == f"Bearer {KEY}"


async def test_an_empty_key_removes_it_and_offline_restores_auto_detection(client, settings,
                                                                            fake_model):
    await client.put("/api/llm", headers=AUTH, json={
        "provider": "openai", "url": fake_model.url, "model": "fake", "api_key": KEY})
    response = await client.put("/api/llm", headers=AUTH, json={"provider": "offline",
                                                                "api_key": ""})
    info = await response.json()
    assert response.status == 200 and info["offline"] is True and info["api_key"] is None
    assert info["auto_detect"] is True
    chosen = client.app[GATEWAY].choice
    assert chosen.llm_provider is None and chosen.llm_api_key is None
    assert client.app[SETTINGS].llm_provider == "offline"  # at start; a restart reads the file
    reloaded = load_settings({"data_dir": str(settings.data_path)}, env={})
    # Nothing pinned: the next start auto-detects a local server again (issue 11 item 7).
    assert reloaded.llm_provider is None and reloaded.llm_api_key is None
    assert reloaded.llm_url is None and reloaded.llm_model is None
    assert KEY not in (settings.data_path / "secrets.toml").read_text()


@pytest.mark.parametrize("body, code", [
    ({"provider": "openai", "url": "ftp://example.org"}, "invalid_url"),
    ({"provider": "openai", "url": "not a url"}, "invalid_url"),
    ({"provider": "gpt"}, "invalid_request"),
    ({"provider": "openai", "url": "http://127.0.0.1:1", "extra": 1}, "invalid_request"),
    ({"provider": "openai", "remote": "yes"}, "invalid_request"),
])
async def test_bad_choices_are_refused_and_change_nothing(client, settings, body, code):
    response = await client.put("/api/llm", headers=AUTH, json=body)
    assert response.status == 400
    assert (await response.json())["error"]["code"] == code
    assert not (settings.data_path / "config.toml").exists()
    assert (await (await client.get("/api/llm", headers=AUTH)).json())["offline"] is True
    assert client.app[GATEWAY].choice.llm_provider == "offline"


async def test_a_setting_fixed_by_the_environment_is_not_changed_here(aiohttp_client, data_dir):
    settings = load_settings({"data_dir": str(data_dir)},
                             env={"NOVABERG_LLM_PROVIDER": "offline"})
    client = await aiohttp_client(create_app(settings, local_token=TOKEN))
    response = await client.put("/api/llm", headers=AUTH, json={
        "provider": "ollama", "url": "http://127.0.0.1:11434"})
    assert response.status == 409
    error = (await response.json())["error"]
    assert error["code"] == "setting_locked" and "NOVABERG_LLM_PROVIDER" in error["message"]
    assert not (data_dir / "config.toml").exists()


async def test_choosing_again_what_the_environment_fixed_keeps_it_fixed(aiohttp_client,
                                                                       data_dir):
    # Naming the URL the environment already sets changes nothing there, so it is allowed —
    # and it must not turn the URL into a setting this API may change from then on.
    fixed = "http://127.0.0.1:11434"
    settings = load_settings({"data_dir": str(data_dir)}, env={"NOVABERG_LLM_URL": fixed})
    client = await aiohttp_client(create_app(settings, local_token=TOKEN))
    same = await client.put("/api/llm", headers=AUTH, json={"provider": "ollama", "url": fixed})
    assert same.status == 200, await same.text()
    assert client.app[SETTINGS].source("llm_url").startswith("env")
    other = await client.put("/api/llm", headers=AUTH, json={
        "provider": "ollama", "url": "http://127.0.0.1:11500"})
    assert other.status == 409
    assert "NOVABERG_LLM_URL" in (await other.json())["error"]["message"]
    assert client.app[GATEWAY].choice.llm_url == fixed
    assert (await (await client.get("/api/llm", headers=AUTH)).json())["url"] == fixed


async def test_only_the_admin_may_choose(aiohttp_client, make_settings):
    settings = make_settings(headless=True, llm_provider="offline")
    token = add_user(settings)
    client = await aiohttp_client(create_app(settings, local_token=TOKEN))
    response = await client.put("/api/llm", headers={"Authorization": f"Bearer {token}"},
                                json={"provider": "offline"})
    assert response.status == 403
    assert (await client.put("/api/llm", json={"provider": "offline"})).status == 401
    foreign = await client.put("/api/llm", headers={**AUTH, "Origin": "http://evil.example"},
                               json={"provider": "offline"})
    assert foreign.status == 403


def test_toml_lines_keep_comments_and_other_settings():
    text = '# my settings\nport = 9000\nllm_model = "old"  # was old\n'
    updated = update_toml_lines(text, {"llm_model": 'neu "x"', "llm_url": None,
                                       "llm_remote": True, "llm_provider": "openai"})
    assert updated == ('# my settings\nport = 9000\nllm_model = "neu \\"x\\""\n'
                       "llm_remote = true\nllm_provider = \"openai\"\n")
    assert update_toml_lines(updated, {"llm_model": None, "llm_remote": None,
                                       "llm_provider": None}) == "# my settings\nport = 9000\n"
