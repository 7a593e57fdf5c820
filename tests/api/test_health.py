from __future__ import annotations

from app import __version__


async def test_health_reports_version_redis_and_model_without_auth(client):
    response = await client.get("/api/health")
    assert response.status == 200
    body = await response.json()
    assert body["status"] == "ok"
    assert body["version"] == __version__
    assert body["redis"]["embedded"] is True
    assert body["redis"]["version"].startswith("6.")
    assert body["llm"]["provider"] == "offline"
