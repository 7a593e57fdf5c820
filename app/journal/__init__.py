"""The journal (design §8, seed 004 §16): a calendar day of the user's conversations becomes an
entry in the user's own voice that states nothing the user did not say.

- `store`: the journal's tables (migration `m003_journal`), every write through the one writer;
- `rows`: the row-level SQL inside a caller's transaction (space, day, entry, version);
- `models`: the read models the store answers (day, job, draft, entry, photo), no URLs;
- `media`: photos in entries (`MediaStore`, files beside the store);
- `day`: a day's conversations (the chat log as source `chat`, imports as source `import`)
  and the local source ids `u1…`/`a1…` of stage 1;
- `schema`, `validator`, `times`: the stage-1 answer (the struct the gateway reads it into,
  and the keys that reading drops) and its pure, fail-closed validation;
- `artifact`: the `VerifiedArtifact`, built locally, the only thing stage 2 sees;
- `budget`: the window and the prompt budget, checked before any model call;
- `stages`: the two model calls, their prompts and their local fallbacks (stage 2's brief is
  the writing profile's, `app.profiles.writing.brief`);
- `trace`: a draft's trace (per stage a `StageRecord`), as stored;
- `jobs`: one generation job per user, its progress over the WebSocket, crash handling;
- `export`: entries as a Markdown or JSON document (the API answers it as a download);
- `offline`: what the offline model answers for the two stages.
"""
