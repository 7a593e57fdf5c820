"""The offline model's knowledge: lexicon perception, extractive summaries, reflective
replies, neutral structured answers. `handlers.HANDLERS` is the purpose table."""
