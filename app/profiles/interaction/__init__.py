"""The interaction profile (seed 004 §12): how the user likes the character to answer, the
responder's `interaction_hint`. Separate from the writing profile (`app.profiles.writing`,
which shapes journal text, not the dialogue) and governed by the same rules
(`app.profiles.governance`).

- `profile`: the labelled product defaults, the user's preferences, governed observations
  and suggestions, and the hint text;
- `store`: the table `interaction_profiles` (migration `m006_profile`), every write through
  the database's one writer;
- `portability`: the `kansho.interaction_profile` document. The combined `kansho.profiles`
  is composed by the writing profile (`app.profiles.writing.portability`), which reads this
  package and is read by nothing here: the pipeline reads the hint without loading it.
"""
