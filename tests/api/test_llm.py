"""The gateway's endpoints: GET /api/llm, POST /api/llm/test, GET /api/admin/llm/traces, and
/api/health's `llm`."""

from __future__ import annotations

import socket

import pytest

from app.api.app_keys import GATEWAY
from app.auth.accounts import add_user_sync
from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN
from tests.store import store_connection


async def test_health_says_plainly_that_no_model_is_configured(client):
    body = await (await client.get("/api/health", headers=AUTH)).json()
    assert body["llm"] == {"provider": "offline", "model": None, "offline": True,
                           "task_model": None}


async def test_get_llm_describes_the_gateway_without_secrets(aiohttp_client, make_settings,
                                                             fake_model):
    settings = make_settings(**fake_model.overrides(llm_api_key="sk-secret"))
    client = await aiohttp_client(create_app(settings, local_token=TOKEN))
    assert (await client.get("/api/llm")).status == 401
    body = await (await client.get("/api/llm", headers=AUTH)).json()
    assert body["provider"] == "openai" and body["model"] == "fake" and body["offline"] is False
    assert body["url"] == fake_model.url and body["remote"] is False
    assert body["api_key"] == "set" and "sk-secret" not in str(body)
    assert body["auto_detect"] is False and body["detected"] == []


async def test_get_llm_names_the_configured_model_while_the_offline_model_runs(
        aiohttp_client, make_settings):
    # No provider chosen and no model server found: the offline model runs, and the model
    # the configuration names (auto-detection would take it) is still said.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        nobody = f"http://127.0.0.1:{sock.getsockname()[1]}"
    settings = make_settings(llm_provider=None, llm_model="llama3.2", llm_probe_openai_url=nobody,
                             llm_probe_ollama_url=nobody)
    app = create_app(settings, local_token=TOKEN)
    client = await aiohttp_client(app)
    await app[GATEWAY].ready()
    body = await (await client.get("/api/llm", headers=AUTH)).json()
    assert body["offline"] is True and body["model"] is None and body["auto_detect"] is True
    assert body["configured"] == {"provider": None, "url": None, "model": "llama3.2",
                                  "task_model": None, "task_url": None}


async def test_connection_test_reports_models_and_window(client, fake_model):
    fake_model.context_length = 16384
    response = await client.post("/api/llm/test", headers=AUTH,
                                 json={"provider": "openai", "url": fake_model.url})
    assert response.status == 200
    assert await response.json() == {"ok": True, "provider": "openai", "url": fake_model.url,
                                     "models": ["fake"], "model": "fake",
                                     "context_window": 16384}
    body = await (await client.post("/api/llm/test", headers=AUTH, json={
        "provider": "ollama", "url": fake_model.url, "model": "fake"})).json()
    assert body["ok"] is True and body["context_window"] == 8192  # capped: Ollama default
    assert (await client.get("/api/health")).status == 200
    assert (await (await client.get("/api/llm", headers=AUTH)).json())["provider"] == "offline"


async def test_a_failed_connection_is_a_result_not_an_error(client):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    response = await client.post("/api/llm/test", headers=AUTH,
                                  json={"provider": "openai", "url": url})
    assert response.status == 200
    body = await response.json()
    assert body["ok"] is False and body["error"]["code"] == "model_unavailable"


async def test_an_empty_url_tests_the_default_that_the_settings_show(aiohttp_client, make_settings,
                                                                     fake_model):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        nobody = f"http://127.0.0.1:{sock.getsockname()[1]}"
    settings = make_settings(llm_provider="offline", llm_probe_openai_url=fake_model.url,
                             llm_probe_ollama_url=nobody)
    client = await aiohttp_client(create_app(settings, local_token=TOKEN))
    described = await (await client.get("/api/llm", headers=AUTH)).json()
    assert described["default_urls"] == {"ollama": nobody, "openai": fake_model.url}
    for body in ({"provider": "openai"}, {"provider": "openai", "url": ""},
                 {"provider": "openai", "url": "  ", "model": "fake"}):
        result = await (await client.post("/api/llm/test", headers=AUTH, json=body)).json()
        assert result["ok"] is True and result["url"] == fake_model.url, body
    result = await (await client.post("/api/llm/test", headers=AUTH,
                                      json={"provider": "ollama", "url": ""})).json()
    assert result["ok"] is False and result["url"] == nobody
    assert result["error"]["code"] == "model_unavailable"


@pytest.mark.parametrize(("body", "code"), [
    ({"url": "http://127.0.0.1:1"}, "invalid_request"),
    ({"provider": "gemini", "url": "http://127.0.0.1:1"}, "invalid_request"),
    ({"provider": "openai", "url": "http://127.0.0.1:1", "extra": 1}, "invalid_request"),
    ({"provider": "openai", "url": "file:///etc/passwd"}, "invalid_url"),
    ({"provider": "openai", "url": "not a url"}, "invalid_url"),
])
async def test_a_bad_connection_test_request_is_400(client, body, code):
    response = await client.post("/api/llm/test", headers=AUTH, json=body)
    assert response.status == 400
    assert (await response.json())["error"]["code"] == code


async def test_a_connection_test_from_a_foreign_origin_is_403(client, fake_model):
    response = await client.post("/api/llm/test", headers={**AUTH, "Origin": "http://evil.test"},
                                 json={"provider": "openai", "url": fake_model.url})
    assert response.status == 403
    assert fake_model.requests == []


async def test_traces_are_readable_by_the_admin_newest_first(client):
    gateway = client.app[GATEWAY]
    for purpose in ("perception", "responder", "summary"):
        await gateway.complete(purpose, [{"role": "user", "content": "Hallo Nova"}],
                               max_tokens=64)
    body = await (await client.get("/api/admin/llm/traces", headers=AUTH)).json()
    assert [t["purpose"] for t in body["traces"]][:3] == ["summary", "responder", "perception"]
    assert all(t["outcome"] == "ok" and t["provider"] == "offline" for t in body["traces"])
    assert "Hallo Nova" not in str(body)
    limited = await (await client.get("/api/admin/llm/traces?limit=1", headers=AUTH)).json()
    assert [t["purpose"] for t in limited["traces"]] == ["summary"]
    bad = await client.get("/api/admin/llm/traces?limit=zero", headers=AUTH)
    assert bad.status == 400 and (await bad.json())["error"]["code"] == "invalid_request"


async def test_admin_endpoints_refuse_other_users(aiohttp_client, make_settings):
    settings = make_settings(llm_provider="offline", headless=True)
    settings.data_path.mkdir(parents=True, exist_ok=True)
    from app.storage.migrations import apply_migrations

    conn = store_connection(settings)
    apply_migrations(conn)
    anna = {"Authorization": f"Bearer {add_user_sync(conn, 'anna', 'correct horse battery')}"}
    conn.close()
    client = await aiohttp_client(create_app(settings, local_token=TOKEN))
    assert (await client.get("/api/llm", headers=anna)).status == 200
    for response in (await client.get("/api/admin/llm/traces", headers=anna),
                     await client.post("/api/llm/test", headers=anna,
                                       json={"provider": "openai", "url": "http://127.0.0.1:1"})):
        assert response.status == 403
        assert (await response.json())["error"]["code"] == "forbidden"
    assert (await client.get("/api/admin/llm/traces", headers=AUTH)).status == 200
