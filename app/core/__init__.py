"""What every layer may use, and which imports no layer: the settings table, the user's clock,
the nine EI dimensions, the server's texts, structured log lines, background-task helpers
(the one wakeable ticker), the prompt-template reader and the process-lifetime helpers."""
