"""What the character remembers, and the Redis key layout (design §2–§4, §3a; seed 000).

- `keys`: every Redis key, built in one place;
- the session (Redis): `session` (the working memory of a pair), `turns` (a stored turn),
  `summary` (folding the oldest turns), `render` (the one history renderer), `commit` (one
  turn's writes as one transaction), `short_term` (the KZG), `state` (the nine EI dimensions
  between turns), `stance` (the `haltung`), `said_today`;
- the durable message log (SQLite): `message_log` (the rows and their outbox) and
  `history` (the chat page's history over it, with imported conversations, paged and
  searched);
- long-term memory: `long_term` (the store), `recall` (which memories fit a text), `words`
  (content words, the support check's), `pixie_queue` (promotion triggers for
  `app.consolidation`);
- what the agents keep per pair: `lists` (the named lists), `reminders` (and the due index
  the reminder clock watches);
- `views`: the read models the API encodes (a memory, a history line);
- `purge`: everything Redis holds about one user, removed.
"""
