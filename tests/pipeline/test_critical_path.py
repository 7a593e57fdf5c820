"""Less model work between the user's message and the delivered reply (issue 36): counted on
the fake model server, by the order in which its requests arrived and the reply was seen.
Speed itself is measured in bench/reply.py, not here."""

from __future__ import annotations

from tests.pipeline_support import fake_app, open_chat, purposes


async def test_an_ordinary_sentence_asks_no_router(fake_model, make_settings, aiohttp_client):
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings, route_by_rules=True))

    sent = await chat.send("Heute war ein langer Tag bei der Arbeit, ich bin müde.")
    await chat.response(sent)
    await chat.settle()

    assert "router" not in purposes(fake_model)
    assert "responder" in purposes(fake_model)


async def test_a_clear_command_asks_no_router_and_acts(fake_model, make_settings,
                                                       aiohttp_client):
    fake_model.script("agent_lists", {"list_name": "Einkaufsliste", "add": ["Milch"]})
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings, route_by_rules=True))

    sent = await chat.send("Setz Milch auf die Einkaufsliste")
    await chat.response(sent)
    await chat.settle()

    assert "router" not in purposes(fake_model)
    assert "agent_lists" in purposes(fake_model)


async def test_an_unclear_sentence_still_asks_the_router(fake_model, make_settings,
                                                         aiohttp_client):
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings, route_by_rules=True))

    sent = await chat.send("Heute war ich im Park und setz Milch auf die Liste")
    await chat.response(sent)
    await chat.settle()

    assert "router" in purposes(fake_model)
