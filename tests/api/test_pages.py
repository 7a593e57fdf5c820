"""The static UI as the server hands it out: pages, modules, login page, revalidation."""

from __future__ import annotations

import pytest

from app.api.pages import web_root


@pytest.mark.parametrize("path, marker", [
    ("/", 'src="/static/js/main.js"'),
    ("/login", 'src="/static/js/login.js"'),
])
async def test_pages_are_public_and_never_cached_stale(client, path, marker):
    response = await client.get(path)
    assert response.status == 200
    assert marker in await response.text()
    assert response.headers["Cache-Control"] == "no-cache"


async def test_every_module_and_stylesheet_is_served_and_revalidated(client):
    files = [p.relative_to(web_root()).as_posix()
             for p in sorted(web_root().rglob("*")) if p.suffix in (".js", ".css", ".svg")]
    assert "js/main.js" in files and "css/app.css" in files
    for name in files:
        response = await client.get(f"/static/{name}")
        assert response.status == 200, name
        assert response.headers["Cache-Control"] == "no-cache", name
        if name.endswith(".js"):
            assert response.content_type in ("application/javascript", "text/javascript"), name
        etag_or_date = response.headers.get("ETag") or response.headers.get("Last-Modified")
        assert etag_or_date, name


async def test_the_api_is_not_touched_by_the_static_rule(client):
    response = await client.get("/api/health")
    assert "Cache-Control" not in response.headers


async def test_a_missing_static_file_is_404(client):
    assert (await client.get("/static/js/nope.js")).status == 404


@pytest.mark.parametrize("count, label", [("1", ">1<"), ("42", ">42<"), ("99", ">99<"),
                                          ("100", ">99+<"), ("123456", ">99+<")])
async def test_the_favicon_badge_shows_the_unseen_count(client, count, label):
    response = await client.get(f"/static/badge/{count}.svg")  # public, like every icon
    assert response.status == 200
    assert response.content_type == "image/svg+xml"
    assert label in await response.text()


@pytest.mark.parametrize("count", ["0", "-1", "x", "١", "1.5"])
async def test_a_badge_that_is_no_count_is_not_found(client, count):
    response = await client.get(f"/static/badge/{count}.svg")
    assert response.status == 404
    assert (await response.json())["error"]["code"] == "not_found"


async def test_the_vendored_modules_are_served_as_javascript(client):
    for path in ("vendor/marked/marked.esm.js", "vendor/dompurify/purify.es.mjs"):
        response = await client.get(f"/static/{path}")
        assert response.status == 200, path
        assert response.content_type in ("application/javascript", "text/javascript"), path
