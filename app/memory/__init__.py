"""Session memory, character state and the Redis key layout (SPEC §2–§4, seed 000)."""
