"""The model gateway: every model call of the product goes through here (design §7).

    from app.llm import Gateway, ModelError, Completion, Message
    result = await gateway.complete("perception", messages, schema=Perception, max_tokens=400,
                                    user_id=user_id)
    async for delta in gateway.stream("responder", messages, max_tokens=600, user_id=...): ...

`user_id` is whose call it is: a remote provider's prompt is masked with that user's people.

Layout: `gateway` (the one interface: the provider in use, the order of a call, concurrency),
`window` (context windows, the budget plan before a call), `retry` (transport retries, the
repair retry), `guard` (a remote call's masking and privacy retry), `providers/` (ollama,
openai, offline — one table), `offline/` (what the offline model answers per purpose),
`choice` (the model choice the UI may change at run time), `budget`, `schema` (structured output, neutral instances), `privacy/` (detectors, masking,
the identity registry), `detect` (auto-detection, `is_local`), `trace`, `types`, `errors`.
"""

from app.llm.errors import CODES, ModelError
from app.llm.gateway import Gateway
from app.llm.types import Completion, Message, TextStream, Usage

__all__ = ["CODES", "Completion", "Gateway", "Message", "ModelError", "TextStream", "Usage"]
