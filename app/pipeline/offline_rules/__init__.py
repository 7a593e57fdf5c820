"""The offline model's rules over the user's words (design §7 `offline`): pure functions of
strings, German and English, no model.

- `routing`: which agents a message wants, whether it answers an open question, and how a
  request splits into one task per agent (the router and the planner);
- `lists`: what a list task asks — which list, which items, add/remove/show/clear/create;
- `reminders`: what a reminder task asks — the due time from a time expression ("morgen um
  9", "in 10 Minuten", "next Monday") and the to-do's text;
- `words`: the building blocks the three share, and the rule that keeps every one of them
  linear in the text.

`app.pipeline.offline` reads the prompt frame and hands these rules its blocks.
"""
