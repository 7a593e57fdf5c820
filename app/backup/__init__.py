"""Backup, restore and export (design §8a, seed 004 §11).

- `archive`: backup folders — create, verify (manifest + checksums), list, prune;
- `database` / `redis_snapshot`: the two parts of a backup;
- `restore`: the checked, confirmed restore with its safety backup, safe to cut off;
- `access`: the data dir and its Redis for the command line, with or without a running app;
- `service`: backups from the running app (API, daily backup);
- `exports` + one module per exporter (`chat_export`, `journal_export`, `memory_export`),
  listed in `registry`: JSON/Markdown exports, streamed, and their import;
- `diary_formats` / `diary_import`: a diary the user already has (Day One, Markdown) read,
  then written as journal entries;
- `cli`: `novaberg backup | restore | export | import | import-diary`.
"""
