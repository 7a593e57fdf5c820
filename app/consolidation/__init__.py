"""Consolidation into long-term memory (design §3a): the seed's "Pixie" — the background worker
that, between turns, turns promotion triggers into checked changes of the pair's long-term
memory.

- `worker`: `PixieWorker`, one background task per process, lowest priority (idle pairs only,
  a free run slot, one model call at a time), draining the Pixie queues
  (`app.memory.pixie_queue`) and writing the `last_used_at` marks of used memories;
- `consolidate`: one trigger → one model call (purpose `consolidation`) → the local checks a
  proposed change must pass (support in the user's own words, known ids, the budget);
- `offline`: what the offline model answers for consolidation, salience and the responder's
  memory questions.

The names `pixie_*` (settings, Redis keys, the queue) keep the seed's word.
"""
