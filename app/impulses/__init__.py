"""The character's own impulses (design §5): the reminder clock that turns due reminders — and,
when enabled, quiet pairs — into impulse events."""
