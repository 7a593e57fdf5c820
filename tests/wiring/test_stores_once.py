"""Every store and service is built once (app/wiring/stores.py, the server's `stores_ctx`) and
shared: the handlers' app keys, the pipelines' services, the runtime, the journal and the
backup service hold the same objects; the process has one `IdentityRegistry`, so a person
registered through the API is seen by the journal's writing profile without a second cache
to go stale. Through the real server (Redis, SQLite)."""

from __future__ import annotations

from app.api.app_keys import (
    BACKUPS,
    GATEWAY,
    INTERACTIONS,
    JOURNAL,
    JOURNAL_STORE,
    LISTS,
    LONG_TERM,
    PIPELINE_HOST,
    PRIVACY,
    PROFILES,
    REDIS_URL,
    REMINDER_CLOCK,
    REMINDERS,
    RUNTIME,
    SESSION,
    SHORT_TERM,
)
from tests.conftest import AUTH


async def test_the_process_has_one_identity_registry(client):
    app = client.app
    registry = app[PRIVACY]
    assert app[PROFILES].identities is registry
    assert app[JOURNAL].profiles is app[PROFILES]
    assert app[GATEWAY].privacy.identities is registry


async def test_a_person_registered_through_the_api_is_seen_by_the_journal(client):
    journal_registry = client.app[JOURNAL].profiles.identities
    assert await journal_registry.people("local") == []  # read once: cached from now on
    response = await client.put(
        "/api/privacy/identities",
        headers=AUTH,
        json={"people": [{"name": "Anna Schmidt", "aliases": ["Anni"]}]},
    )
    assert response.status == 200
    people = await journal_registry.people("local")
    assert [person.names() for person in people] == [["Anna Schmidt", "Anni"]]


async def test_the_pipelines_runtime_and_loops_share_the_handlers_stores(client):
    app = client.app
    services = app[PIPELINE_HOST].services
    assert services.memory is app[SESSION] is app[RUNTIME].memory
    assert services.short_term is app[SHORT_TERM]
    assert services.reminders is app[REMINDERS] is app[REMINDER_CLOCK].store
    assert services.lists is app[LISTS]
    assert services.long_term is app[LONG_TERM]
    assert services.interactions is app[INTERACTIONS] is app[PIPELINE_HOST].interactions
    assert app[PROFILES].interactions is app[INTERACTIONS]
    assert app[JOURNAL].store is app[JOURNAL_STORE]


async def test_the_backup_service_is_told_the_redis_in_use(client):
    """The wiring knows the URL (the embedded server's here): the backup service does not
    build a Redis of its own to learn it."""
    app = client.app
    assert app[BACKUPS].redis_url == app[REDIS_URL]
    assert app[REDIS_URL].startswith(("redis://", "unix://"))
