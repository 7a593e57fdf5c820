"""What the offline model answers for the pipelines' purposes (design §7 `offline`).

Listed in `PURPOSE_HANDLERS`, which the wiring composes into the offline model's answers
(`app.wiring.purposes`; its `responder` takes the place of the provider's own). Deterministic,
no model: small German and English rules over the
prompt frame (`app.pipeline.prompts.frame`: titled blocks), so that without any model server
"Setz Milch auf die Einkaufsliste" puts Milch on the list, "Erinnere mich morgen an den
Zahnarzt" sets a reminder, and everything else gets a plain, sensible reply. Perception
itself is the provider's own lexicon handler (`perception`).

Every answer is a dict of field values put over the neutral instance of the requested
schema (a value the schema does not accept leaves the neutral default), or text.

The rules over the user's words live in `app.pipeline.offline_rules` (routing, the lists
agent's, the reminders agent's); this module reads the prompt frame and answers the purposes.
"""

from __future__ import annotations

import re
from typing import Any

from app.llm.offline import handlers
from app.llm.offline import text as tx
from app.llm.offline.handlers import OfflineRequest, core_summary, perceive_text
from app.pipeline.offline_rules import lists, reminders, routing
from app.pipeline.prompts import BLOCKS, Blocks, read_frame
from app.pipeline.tribunal import strip_labels

HEAVY_EMOTIONS = handlers.HEAVY


# --- reading the frame -----------------------------------------------------------------------


class Frame:
    """The blocks of the last user message, by their field name in `Blocks`."""

    def __init__(self, request: OfflineRequest) -> None:
        content = next(
            (m["content"] for m in reversed(request.messages) if m["role"] == "user"), ""
        )
        self.system = next((m["content"] for m in request.messages if m["role"] == "system"), "")
        self.found = read_frame(content)
        self.language = "de"
        for language, blocks in BLOCKS.items():
            if any(title in self.found for title in vars_of(blocks)):
                self.language = language
                break
        self.blocks = BLOCKS[self.language]

    def get(self, name: str) -> str:
        return self.found.get(getattr(self.blocks, name), "")

    def last_user_words(self) -> str:
        users = [c for c in tx.contributions(self.get("history")) if c.is_user]
        return users[-1].text if users else ""

    def last_character_words(self) -> str:
        said = [c for c in tx.contributions(self.get("history")) if not c.is_user]
        return said[-1].text if said else ""


def vars_of(blocks: Blocks) -> list[str]:
    return [getattr(blocks, name) for name in blocks.__dataclass_fields__]


# --- router, planner, agents -------------------------------------------------------------------


def known(frame: Frame) -> routing.Known:
    return routing.Known.of(frame.get("lists"), frame.get("reminders"))


def router(request: OfflineRequest) -> dict[str, Any]:
    frame = Frame(request)
    words = frame.last_user_words()
    pending = frame.get("pending")
    if pending and routing.answers_question(words, pending):
        return {"answers_pending": True}
    text = frame.get("intent") or words
    agents = routing.agents_for(text, known(frame), routing.recent_turns(frame.get("history")))
    return {"needs_action": bool(agents), "agents": agents}


def planner(request: OfflineRequest) -> dict[str, Any]:
    frame = Frame(request)
    return {
        "steps": [
            {"agent": agent, "task": task}
            for agent, task in routing.split_tasks(frame.get("request"))
        ]
    }


def agent_lists(request: OfflineRequest) -> dict[str, Any]:
    frame = Frame(request)
    resuming = bool(frame.get("pending"))
    task = frame.get("task")
    if not resuming:
        task = routing.command_text(
            task, "lists", known(frame), routing.recent_turns(frame.get("history"))
        )
    return lists.command(task, frame.get("lists"), resuming)


def agent_reminders(request: OfflineRequest) -> dict[str, Any]:
    frame = Frame(request)
    resuming = bool(frame.get("pending"))
    task = frame.get("task")
    if not resuming:
        task = routing.command_text(
            task, "reminders", known(frame), routing.recent_turns(frame.get("history"))
        )
    asked_for = frame.get("pending").rsplit("\n", 1)[-1]  # the question, then its task
    return reminders.command(task, frame.get("now"), resuming, frame.get("reminders"), asked_for)


# --- responder, thinker, corrector, salience ---------------------------------------------------

PHRASES = {
    "de": {
        "continue": "Ich wollte noch einmal nachfragen: Wie geht es dir jetzt damit?",
        "retry": "Lass mich das noch ergänzen: Was genau brauchst du von mir?",
        "commitment": "recherche",
        "follow_up": "nachfragen",
    },
    "en": {
        "continue": "I wanted to check in once more: how are you feeling about it now?",
        "retry": "Let me add to that: what exactly do you need from me?",
        "commitment": "look into it",
        "follow_up": "ask how they are",
    },
}
_COMMITMENT = re.compile(
    r"\b(?:ich schau\w*|ich seh\w* (?:mal )?nach|ich werde\b[^.?!]*\b(?:nachsehen|nachschauen|"
    r"recherchieren|herausfinden|prüfen|suchen)|ich kümmere mich|i'?ll look into|"
    r"i will look into|let me check|i'?ll find out)\b",
    re.I,
)


def _lines(block: str) -> list[str]:
    return [line.lstrip("-• ").strip() for line in block.split("\n") if line.strip()]


def responder(request: OfflineRequest) -> str:
    frame = Frame(request)
    if not frame.found:  # not a pipeline prompt: the provider's own reflective reply
        return handlers.responder(request)
    words = PHRASES[frame.language]
    said = " ".join(_lines(frame.get("actions")))
    question = frame.get("question")
    if question:
        return f"{said} {question}".strip()
    if said:
        return said
    thought = frame.get("thought")
    if thought:  # the character's own thought, in its own words already
        return thought
    task = frame.get("task")
    if frame.get("retry"):
        return words["retry"]
    if task and (
        BLOCKS[frame.language].intent in task or "noch einmal" in task or "once more" in task
    ):
        return words["continue"]
    conversation = request.conversation
    reply = handlers.reflective_reply(
        frame.last_user_words(), request.max_chars, previous=said_before(frame, conversation)
    )
    if conversation is not None:
        conversation.remember(reply)
    return reply


def said_before(frame: Frame, conversation: handlers.Conversation | None) -> list[str]:
    """What the character said that a reply must not repeat: its answers in the history
    the prompt shows, and what the offline model said today in this conversation."""
    shown = [c.text for c in tx.contributions(frame.get("history")) if not c.is_user]
    return [*shown, *(conversation.said() if conversation is not None else [])]


def thinker(request: OfflineRequest) -> dict[str, Any]:
    frame = Frame(request)
    words = PHRASES[frame.language]
    answer = frame.get("answer")
    asked = frame.get("request")
    if _COMMITMENT.search(answer):
        return {"commitment": True, "intent": words["commitment"]}
    if asked and not answer.strip():
        return {"misses_request": True, "reason": "-"}
    if asked and "?" not in answer and perceive_text(asked).emotion in HEAVY_EMOTIONS:
        return {"follow_up": True, "intent": words["follow_up"]}
    return {}


_NAME_IN_SYSTEM = re.compile(r"(?:Antwort von|answer of)\s+([^\s,]+)")


def corrector(request: OfflineRequest) -> str:
    frame = Frame(request)
    name = _NAME_IN_SYSTEM.search(frame.system)
    text = strip_labels(frame.get("answer"), name.group(1) if name else "Nova")
    kept = [line for line in text.split("\n") if not line.lstrip().startswith("###")]
    return "\n".join(kept).strip()


def salience(request: OfflineRequest) -> dict[str, Any]:
    frame = Frame(request)
    words = frame.last_user_words()
    if not words.strip():
        return {}
    seen = perceive_text(words)
    importance = 0.1
    if seen.emotion != "neutral":
        importance += 0.3 if seen.emotion in HEAVY_EMOTIONS else 0.2
    if {"erinnerung", "notiz"} & set(seen.intentions):
        importance += 0.3
    if re.search(r"\d", words) or any(w[0].isupper() for w in tx.words(words)[1:]):
        importance += 0.2
    importance = round(min(importance, 1.0), 2)
    return {
        "importance": importance,
        "segments": [core_summary(words)] if importance >= 0.5 else [],
    }


def salience_character(request: OfflineRequest) -> dict[str, Any]:
    frame = Frame(request)
    said = _lines(frame.get("actions"))
    mood = re.search(r"emotion:\s*([^,\n]+)", frame.get("mood"))
    return {
        "importance": 0.7 if said else 0.3,
        "segments": said,
        "emotion": mood.group(1).strip() if mood else "",
    }


PURPOSE_HANDLERS: handlers.Answers = {
    "salience": salience,
    "router": router,
    "planner": planner,
    "agent_lists": agent_lists,
    "agent_reminders": agent_reminders,
    "responder": responder,
    "thinker": thinker,
    "corrector": corrector,
    "salience_character": salience_character,
}
