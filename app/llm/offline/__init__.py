"""The offline model's knowledge: lexicon perception, extractive summaries, reflective
replies, neutral structured answers. `handlers.HANDLERS` is the purpose table; what the model
says in its replies is in `phrases`."""
