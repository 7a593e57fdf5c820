"""The writing profile (seed 004 §12–§15; design §8, last paragraph).

- `model`: the profile as data (core, facets, dynamic traits with origin, lock and sources)
  and the pure rules that apply a change and decide what an automatic path may touch (the
  governance and origins it shares with the interaction profile are `app.profiles.governance`);
- `store`: the tables (migrations `m006_profile`, `m010_profile_review_privacy`), versions,
  proposals, evidence, the copy packages' placeholder mappings, all writes through the one
  writer; the lifecycle is `statemachine.profile`;
- `corpus`: the user's own texts (voiced entries, dialog samples) read from the journal;
- `brief`: the compiled brief for stage 2 of the journal (word-bound cuts) and the journal's
  default brief, `DEFAULT_BRIEF`, which stage 2 reads here;
- `package`: the `kansho.profile_analysis_package` export (and its masking walk) and the
  `…_result` import check;
- `review`: the AI review through the model gateway (and the offline model's answer);
- `signals`: the local save-time triggers that make a saved entry a review candidate;
- `portability`: the JSON export/import of the writing profile and of both profiles together
  (the interaction profile — the responder's `interaction_hint` — is `app.profiles.interaction`);
- `service`: the operations the API and the journal call;
- `views`: the read models the API encodes (overview, versions, proposals, evidence).
"""
