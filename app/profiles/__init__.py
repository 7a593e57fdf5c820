"""The user's two profiles (seed 004 §12–§15) and the rules they share.

- `writing/`: the writing profile — the user's voice, which shapes the journal's text (stage 2
  reads its compiled brief, or the default brief `writing.brief.DEFAULT_BRIEF`);
- `interaction/`: the interaction profile — how the user likes the character to answer, the
  responder's `interaction_hint`;
- `governance`: what both share — governance (`learning`, `advising`, `frozen`), origins, the
  name rule and `derive_key`, the portable documents' version and error.

The writing profile reads the interaction profile (it composes the combined export); the
interaction profile reads nothing of the writing profile, so the pipeline loads only it.
"""
