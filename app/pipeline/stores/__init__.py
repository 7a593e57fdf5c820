"""What the pipelines keep besides the session: short-term memory, lists, reminders (Redis)
and the durable message log (SQLite). Keys come from `app.memory.keys`."""
