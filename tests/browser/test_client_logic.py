"""The client's bookkeeping (web/js/conversation.js and friends), run as ES modules in chromium.

These drive the Conversation with the wire messages of design §9 in the orders a real network
can produce (a broadcast overtaking the 202, a message twice, a reconnect's session merge, a
reload's ledger) and check what the tab then shows: once, in order, with the right labels.
The end-to-end tests (test_chat.py) show the same against the real server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page

from app.memory.turns import ORIGIN_OF_OCCASION
from tests.browser.helpers import TOKEN
from tests.procs import AppProcess, clean_env

pytestmark = pytest.mark.browser

SETUP = """
async () => {
  const { Conversation } = await import('/static/js/conversation.js');
  window.Conversation = Conversation;
  window.memoryStorage = () => {
    const data = new Map();
    return { getItem: (k) => (data.has(k) ? data.get(k) : null), setItem: (k, v) => data.set(k, String(v)),
             removeItem: (k) => data.delete(k), data };
  };
  // What a tab shows, compactly: one line per entry.
  window.shown = (c) => c.ordered().map((e) => {
    if (e.kind === 'user') return `user ${e.ids.join('+') || 'local'} ${e.status} ${e.mine ? 'mine' : 'other'}${e.live ? '' : ' history'}: ${e.text}`;
    if (e.kind === 'character') return `nova ${e.turnId} ${e.origin}${e.answersOther ? ' answers-other' : ''}: ${e.text}`;
    return `failure ${e.turnId} ${e.reason}${e.resent ? ' resent' : ''}: ${e.messageIds.join('+')}`;
  });
  window.ws = {
    accepted: (id, text, at) => ({ type: 'message_accepted', character_id: 'nova', at, message_id: id, text, received_at: at }),
    state: (turn, state, ids, at = 1) => ({ type: 'turn_state', character_id: 'nova', at, turn_id: turn, state, message_ids: ids }),
    stage: (turn, stage) => ({ type: 'character_stage', character_id: 'nova', at: 1, turn_id: turn, stage }),
    response: (turn, ids, text, at, origin = 'reply') => ({ type: 'character_response', character_id: 'nova', at, turn_id: turn,
      message_ids: ids, text, origin, emotion: 'freude', arousal: 0.6 }),
    failed: (turn, ids, reason, at) => ({ type: 'turn_failed', character_id: 'nova', at, turn_id: turn, message_ids: ids, reason }),
  };
}
"""


@pytest.fixture(scope="module")
def page(browser: Browser, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    """One page of the real app (the modules are served by it), shared by these tests."""
    data_dir = tmp_path_factory.mktemp("logic") / "data"
    data_dir.mkdir()
    app = AppProcess(data_dir, token=TOKEN, env=clean_env(NOVABERG_LLM_PROVIDER="offline")).start()
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(app.url + "/login")
        page.evaluate(SETUP)
        yield page
    finally:
        context.close()
        app.stop()


def run(page: Page, body: str) -> Any:
    """Run `body` (JS statements ending in `return …`) with a fresh Conversation `c`."""
    return page.evaluate(f"() => {{ const c = new Conversation(); {body} }}")


def test_a_sent_message_is_pending_until_the_answer_names_it(page):
    shown = run(page, """
        const key = c.beginSend('Hallo');
        const states = [shown(c)[0]];
        c.sendAccepted(key, 'm1', 10);
        states.push(shown(c)[0], JSON.stringify(c.openIds()));
        c.apply(ws.state('t1', 'path1', ['m1'], 11));
        c.apply(ws.response('t1', ['m1'], 'Hallo zurück', 12));
        return [...states, ...shown(c), JSON.stringify(c.openIds())];
    """)
    assert shown == [
        "user local sending mine: Hallo",
        "user m1 pending mine: Hallo",
        '["m1"]',
        "user m1 answered mine: Hallo",
        "nova t1 reply: Hallo zurück",
        "[]",
    ]


def test_the_broadcast_overtaking_the_202_is_shown_once(page):
    shown = run(page, """
        const key = c.beginSend('Schnell');
        c.apply(ws.accepted('m1', 'Schnell', 10));   // our own broadcast, before the 202
        c.sendAccepted(key, 'm1', 10);
        c.apply(ws.accepted('m1', 'Schnell', 10));   // and once more (a reconnect snapshot)
        return shown(c);
    """)
    assert shown == ["user m1 pending mine: Schnell"]


def test_an_answer_overtaking_the_202_is_still_this_tabs_answer(page):
    shown = run(page, """
        const a = c.beginSend('schnell');
        c.apply(ws.accepted('m1', 'schnell', 10));   // broadcast first …
        c.apply(ws.response('t1', ['m1'], 'Antwort', 11));   // … then a very fast answer …
        c.sendAccepted(a, 'm1', 10);                 // … and only then the 202
        const b = c.beginSend('noch schneller');
        c.apply(ws.response('t2', ['m2'], 'vor allem', 12));   // the answer before everything
        c.sendAccepted(b, 'm2', 11.5);
        const d = c.beginSend('gleich kaputt');
        c.apply(ws.failed('t3', ['m3'], 'model_unavailable', 14));   // a failure, likewise
        c.sendAccepted(d, 'm3', 13);
        return [...shown(c), JSON.stringify(c.openIds())];
    """)
    assert shown == [
        "user m1 answered mine: schnell",
        "nova t1 reply: Antwort",
        "user m2 answered mine: noch schneller",
        "nova t2 reply: vor allem",
        "user m3 failed mine: gleich kaputt",
        "failure t3 model_unavailable: m3",
        "[]",
    ]


def test_another_tabs_message_with_the_same_text_stays_apart(page):
    shown = run(page, """
        const key = c.beginSend('ja');
        c.apply(ws.accepted('other', 'ja', 10));     // another tab said the same, first
        c.sendAccepted(key, 'mine', 11);
        c.apply(ws.accepted('mine', 'ja', 11));
        c.apply(ws.response('t1', ['other'], 'Antwort an den anderen Tab', 12));
        c.apply(ws.response('t2', ['mine'], 'Antwort an mich', 13));
        return shown(c);
    """)
    assert shown == [
        "user other answered other: ja",
        "user mine answered mine: ja",
        "nova t1 reply answers-other: Antwort an den anderen Tab",
        "nova t2 reply: Antwort an mich",
    ]


def test_the_same_response_twice_and_a_continue_of_the_same_turn(page):
    shown = run(page, """
        const key = c.beginSend('Erzähl');
        c.sendAccepted(key, 'm1', 10);
        const answer = ws.response('t1', ['m1'], 'Es war einmal', 11);
        c.apply(answer);
        c.apply(answer);                              // delivered twice: shown once
        c.apply(ws.response('t1', ['m1'], 'und dann', 12, 'continue'));  // same turn id
        return shown(c);
    """)
    assert shown == [
        "user m1 answered mine: Erzähl",
        "nova t1 reply: Es war einmal",
        "nova t1 continue: und dann",
    ]


def test_an_own_impulse_is_marked_and_is_no_answer_to_another_tab(page):
    shown = run(page, """
        c.apply(ws.state('t9', 'path2', [], 20));
        const stage = c.activeTurn();
        c.apply(ws.response('t9', [], 'Denk an den Zahnarzt!', 21, 'own_impulse'));
        return [JSON.stringify([stage.turnId, stage.state]), ...shown(c), String(c.activeTurn())];
    """)
    assert shown == ['["t9","path2"]', "nova t9 own_impulse: Denk an den Zahnarzt!", "null"]


def test_a_failure_closes_the_ids_and_offers_their_texts_again(page):
    result = run(page, """
        const a = c.beginSend('eins'); c.sendAccepted(a, 'm1', 10);
        const b = c.beginSend('zwei'); c.sendAccepted(b, 'm2', 11);
        c.apply(ws.failed('t1', ['m1', 'm2'], 'model_unavailable', 12));
        c.apply(ws.failed('t1', ['m1', 'm2'], 'model_unavailable', 12));   // twice: one notice
        const texts = c.resendTexts('f:t1');
        c.markResent('f:t1');
        return { shown: shown(c), texts, open: c.openIds() };
    """)
    assert result == {
        "shown": ["user m1 failed mine: eins", "user m2 failed mine: zwei",
                  "failure t1 model_unavailable resent: m1+m2"],
        "texts": ["eins", "zwei"],
        "open": [],
    }


def test_an_unsent_message_keeps_its_text_and_can_be_sent_again(page):
    shown = run(page, """
        const key = c.beginSend('kein Netz');
        c.sendFailed(key, 'the server cannot be reached');
        const before = shown(c);
        const text = c.retrySend(key);
        c.sendAccepted(key, 'm1', 10);
        return [...before, text, ...shown(c)];
    """)
    assert shown == ["user local unsent mine: kein Netz", "kein Netz",
                     "user m1 pending mine: kein Netz"]


def test_a_session_merge_adds_what_was_missed_and_repeats_nothing(page):
    # The table comes from the server's one copy, as `GET …/session` sends it.
    shown = run(page, """
        const key = c.beginSend('Frage'); c.sendAccepted(key, 'm2', 20);
        c.apply(ws.response('t2', ['m2'], 'Antwort', 22));
        c.mergeSession({ summary: 'Früher: Kaffee.', origins: ORIGINS, turns: [
          { turn_id: 't1', rolle: 'user', inhalt: 'alt eins\\nalt zwei', zeit: 5, nachrichten_ids: ['m0', 'm1'] },
          { turn_id: 't1', rolle: 'assistant', inhalt: 'Alte Antwort', zeit: 6, herkunft: 'antwort', nachrichten_ids: ['m0', 'm1'] },
          { turn_id: 't0', rolle: 'assistant', inhalt: 'Ein Impuls', zeit: 7, herkunft: 'eigener_impuls', nachrichten_ids: [] },
          { turn_id: 't2', rolle: 'user', inhalt: 'Frage', zeit: 20, nachrichten_ids: ['m2'] },
          { turn_id: 't2', rolle: 'assistant', inhalt: 'Antwort', zeit: 22, herkunft: 'antwort', nachrichten_ids: ['m2'] },
          { rolle: 'assistant', inhalt: 'Ganz alt', zeit: 1, herkunft: '' },
        ]});
        const once = shown(c).join('|');
        c.mergeSession({ summary: 'Früher: Kaffee.', turns: [] });   // merging again changes nothing
        return [...shown(c), String(once === shown(c).join('|')), c.summary];
    """.replace("ORIGINS", json.dumps(ORIGIN_OF_OCCASION)))
    assert shown == [
        "nova s1 unknown: Ganz alt",
        "user m0+m1 answered other history: alt eins\nalt zwei",
        "nova t1 reply: Alte Antwort",
        "nova t0 own_impulse: Ein Impuls",
        "user m2 answered mine: Frage",
        "nova t2 reply: Antwort",
        "true",
        "Früher: Kaffee.",
    ]


def test_a_merged_block_replaces_the_part_this_tab_had(page):
    shown = run(page, """
        c.apply(ws.accepted('m1', 'erste', 10));      // this tab saw only the first message
        c.mergeSession({ turns: [
          { turn_id: 't1', rolle: 'user', inhalt: 'erste\\nzweite', zeit: 11, nachrichten_ids: ['m1', 'm2'] }]});
        c.apply(ws.state('t1', 'path2', ['m1', 'm2'], 12));
        return shown(c);
    """)
    assert shown == ["user m1+m2 pending other history: erste\nzweite"]


def test_a_reload_restores_open_ids_unsent_texts_and_failure_notices(page):
    result = page.evaluate("""() => {
        const storage = memoryStorage();
        const first = new Conversation({ storage, storageKey: 'k' });
        const a = first.beginSend('offen'); first.sendAccepted(a, 'm1', 10);
        const b = first.beginSend('gescheitert'); first.sendAccepted(b, 'm2', 11);
        first.apply(ws.failed('t2', ['m2'], 'model_timeout', 12));
        const u = first.beginSend('ungesendet'); first.sendFailed(u, 'offline');
        const d = first.beginSend('beantwortet'); first.sendAccepted(d, 'm4', 14);
        first.apply(ws.response('t4', ['m4'], 'ok', 15));
        const inFlight = first.beginSend('unterwegs');      // reload while the POST runs

        const second = new Conversation({ storage, storageKey: 'k' });
        const restored = shown(second);
        second.apply(ws.accepted('m5', 'unterwegs', 16));   // it had arrived after all
        return { restored, after: shown(second), open: second.openIds() };
    }""")
    assert result["restored"] == [
        "user m1 pending mine history: offen",
        "user m2 failed mine history: gescheitert",
        "failure t2 model_timeout: m2",
        "user local unsent mine history: ungesendet",
        "user local unsent mine history: unterwegs",
    ]
    # The answered message is not in the ledger (the session has it); the "maybe sent" one
    # gave way to the real one.
    assert "user m5 pending other: unterwegs" in result["after"]
    assert "user local unsent mine history: unterwegs" not in result["after"]
    assert result["open"] == ["m1"]


def test_the_message_record_after_a_reconnect_settles_an_open_id(page):
    result = run(page, """
        const a = c.beginSend('eins'); c.sendAccepted(a, 'm1', 10);
        const b = c.beginSend('zwei'); c.sendAccepted(b, 'm2', 11);
        const d = c.beginSend('drei'); c.sendAccepted(d, 'm3', 12);
        const e = c.beginSend('vier'); c.sendAccepted(e, 'm4', 13);
        c.applyMessageRecord('m1', { message_id: 'm1', turn_id: 't1', state: 'delivered' });
        c.applyMessageRecord('m2', { message_id: 'm2', turn_id: 't2', state: 'failed' },
                             { turn_id: 't2', state: 'failed', reason: 'lock_timeout', message_ids: ['m2'],
                               history: [{ state: 'failed', at: 14 }] });
        c.applyMessageRecord('m3', null);
        c.applyMessageRecord('m4', { message_id: 'm4', turn_id: 't4', state: 'path1' });
        return { shown: shown(c), open: c.openIds(), stage: c.activeTurn().state };
    """)
    assert result == {
        "shown": ["user m1 answered mine: eins", "user m2 failed mine: zwei",
                  "user m3 failed mine: drei", "failure lost:m3 not_found: m3",
                  "user m4 pending mine: vier", "failure t2 lock_timeout: m2"],
        "open": ["m4"],
        "stage": "path1",
    }


def test_language_backoff_stage_and_time_helpers(page):
    result = page.evaluate("""async () => {
        const { pickLanguage } = await import('/static/js/i18n.js');
        const { backoffDelay } = await import('/static/js/socket.js');
        const { stageKey } = await import('/static/js/chat.js');
        const { isoWithOffset } = await import('/static/js/panels.js');
        const date = new Date(2026, 10, 8, 14, 58, 0);
        return {
          languages: [pickLanguage(['de-AT', 'en']), pickLanguage(['fr-FR', 'en-GB']), pickLanguage([]),
                      pickLanguage(['DE'])],
          delays: [backoffDelay(0, () => 0), backoffDelay(0, () => 1), backoffDelay(3, () => 1),
                   backoffDelay(30, () => 1)],
          stages: [stageKey({ state: 'queued' }), stageKey({ state: 'path1', stage: 'salience' }),
                   stageKey({ state: 'path2', stage: 'router' }), stageKey({ state: 'path2', stage: 'planner' }),
                   stageKey({ state: 'path2', stage: 'responder' }), stageKey({ state: 'path2', stage: 'tribunal' }),
                   stageKey({ state: 'path2', stage: 'salience' }), stageKey({ state: null, stage: 'perception' }),
                   stageKey({ state: 'path2', stage: 'lists' }), stageKey(null)],
          isoRoundTrip: Date.parse(isoWithOffset(date)) === date.getTime(),
          isoShape: /^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d[+-]\\d\\d:\\d\\d$/.test(isoWithOffset(date)),
        };
    }""")
    assert result == {
        "languages": ["de", "en", "en", "de"],
        "delays": [250, 500, 4000, 15000],
        "stages": ["stage.queued", "stage.perceiving", "stage.thinking", "stage.acting",
                   "stage.writing", "stage.checking", "stage.writing", "stage.perceiving",
                   "stage.acting", None],
        "isoRoundTrip": True,
        "isoShape": True,
    }


def test_a_session_reset_clears_the_tab_and_a_late_202_does_not_reopen_its_id(page):
    result = run(page, """
        const a = c.beginSend('vor dem Reset');
        c.apply(ws.accepted('m1', 'vor dem Reset', 10));
        c.apply(ws.failed('t0', ['m1'], 'session_reset', 11));   // the reset ended it …
        const b = c.beginSend('während des Resets');             // … this POST is in flight
        c.apply({ type: 'session_reset', character_id: 'nova', at: 12 });
        const afterReset = shown(c);
        c.sendAccepted(a, 'm1', 10);                              // a late 202 for the ended id
        c.sendAccepted(b, 'm2', 13);                              // accepted after the reset
        return { afterReset, shown: shown(c), open: c.openIds() };
    """)
    assert result == {
        # Both POSTs are still in flight as far as this tab knows: it cannot tell yet.
        "afterReset": ["user local sending mine: vor dem Reset",
                       "user local sending mine: während des Resets"],
        "shown": ["user m2 pending mine: während des Resets"],
        "open": ["m2"],
    }


def test_the_socket_keeps_one_connection_and_ignores_a_replaced_ones_events(page):
    result = page.evaluate("""async () => {
        const { ReconnectingSocket } = await import('/static/js/socket.js');
        const made = [];
        class FakeSocket extends EventTarget {
          constructor(url) { super(); this.url = url; this.readyState = 0; made.push(this); }
          close() { this.readyState = 3; this.dispatchEvent(new Event('close')); }
        }
        Object.assign(FakeSocket, { CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3 });
        const real = window.WebSocket;
        window.WebSocket = FakeSocket;
        const got = [], opened = [];
        const message = (n) => Object.assign(new Event('message'), { data: JSON.stringify({ n }) });
        const open = (ws) => { ws.readyState = 1; ws.dispatchEvent(new Event('open')); };
        try {
          const socket = new ReconnectingSocket({ url: 'ws://x', onMessage: (m) => got.push(m.n),
                                                  onOpen: () => opened.push(made.length) });
          socket.start();
          socket.reconnectNow();          // `online` while connecting: no second socket
          open(made[0]);
          socket.reconnectNow();          // `online` while open: none either
          const before = made.length;
          socket.connect();               // an explicit reconnect replaces the socket
          made[0].dispatchEvent(message(1));   // a late message of the replaced one
          open(made[1]);
          made[1].dispatchEvent(message(2));
          socket.stop();
          return { before, made: made.length, states: made.map((w) => w.readyState), got, opened };
        } finally {
          window.WebSocket = real;
        }
    }""")
    assert result == {"before": 1, "made": 2, "states": [3, 3], "got": [2], "opened": [1, 2]}
