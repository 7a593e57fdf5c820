"""Session memory, character state and the Redis key layout (design §2–§4, seed 000)."""
