"""What every room may use, and which imports no room. Flat by choice (17 modules, each one
thing, imported from everywhere); by kind:

- the product's tables: `settings` (every tunable), `emotion` (the nine EI dimensions),
  `i18n` (the server's texts) and `grammar` (their sentences), `user_names` (the one rule of
  a user name), `prompt_templates` (the template reader), `clock` (the user's zone and day);
- input helpers: `json_input` (decoding JSON from outside), `text` (what counts as empty),
  `lenient` (reading a stored record field by field), `refusal` (`Refused`, a request a room
  cannot serve, in the API's error shape);
- the loop and the process: `log` (structured lines), `background` (kept tasks, the one
  wakeable ticker), `lanes` (the person's work before the turns'), `admission` (how many
  requests begin per loop round), `descriptors` (file-descriptor room made at start),
  `lifetime` (no child outlives us).
"""
