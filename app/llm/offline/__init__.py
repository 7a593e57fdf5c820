"""The offline model's knowledge: lexicon perception, extractive summaries, reflective
replies, neutral structured answers. `handlers.BASE_ANSWERS` is its own purpose table
(`handlers.extended` adds to it); what the model says in its replies is in `phrases`."""
