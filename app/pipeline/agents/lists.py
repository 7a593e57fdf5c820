"""The notes/lists agent: add, remove, show and clear items in named lists (seed 001 §6.2).

The agent does not write: it returns the intended `ListEdit`, which the dispatcher applies
with the turn once the tribunal has accepted the answer.

The model reads the task (`agent_lists`: which list, which items); the agent decides which
list that is, deterministically:

- a list of that name exists → that list;
- a name is given and the user asked for a new list, or there are no lists yet → a new list;
- no name and exactly one list → that list;
- items that are only a pronoun ("Streich die", the model's or the rules' reading when the
  conversation names nothing it stands for): it asks which entry is meant, changing nothing;
- no name, items to cross off ("Streich die Eier"): the list the conversation is about — the
  one list that has them, or of several that have them the one changed last; none has
  them: the list changed last, which then reports them missing;
- otherwise it asks "which list?" (outcome `follow_up`). The question is a normal chat
  message; the agent's context travels in the `awaiting_user` event and the user's next
  message resumes it: the answer names a list (or a new one), the original items stay.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

import msgspec

from app.core.grammar import is_pronoun, join, sentence, several
from app.core.i18n import texts
from app.core.log import fields
from app.memory.lists import (
    ListChange,
    ListEdit,
    NamedList,
    normalize,
    preview,
)
from app.pipeline.agents.follow_up import follow_up, original_command, pending_text
from app.pipeline.context import NodeContext, reply_language
from app.pipeline.prompts import frame
from app.pipeline.schemas import AgentName, ListCommand
from app.pipeline.state import AgentContext, AgentResult, Path2State

log = logging.getLogger(__name__)

AGENT: AgentName = "lists"


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    create: bool


async def run(
    ctx: NodeContext, state: Path2State, task: str, pending: AgentContext | None
) -> AgentResult:
    store = ctx.services.lists.of(state.user_id, state.character_id)
    existing = await store.all()
    b = ctx.blocks
    command: ListCommand = await ctx.ask_struct(
        "agent_lists",
        frame(
            [
                (b.lists, lists_text(existing, ctx.language)),
                (b.history, state.history),
                (b.pending, pending_text(pending)),
                (b.task, task),
            ]
        ),
    )
    if pending is not None:
        command = resumed(command, pending)
    language = reply_language(ctx, state)
    words = _phrases(language)
    if not (command.add or command.remove or command.show or command.clear or command.create_list):
        return AgentResult(agent=AGENT, task=task, outcome="nothing")
    if command.show and not (command.add or command.remove or command.clear or command.list_name):
        return AgentResult(
            agent=AGENT, task=task, outcome="completed", said=show_all(existing, language)
        )
    if command.remove and all(is_pronoun(item) for item in command.remove):
        # "Streich die" with nothing in the conversation it stands for: ask, never guess.
        log.info("list removal names only a pronoun; asking")
        return AgentResult(
            agent=AGENT,
            task=task,
            outcome="refused",
            said=[words["which_item"].format(word=command.remove[0])],
        )
    answer = task if pending is not None else ""
    target = resolve(command, existing, answer)
    if target is None:
        return _ask(ctx, state, task, command, existing, pending)
    if not target.create and find(existing, target.name) is None:
        return AgentResult(
            agent=AGENT,
            task=task,
            outcome="refused",
            said=[words["not_found"].format(name=target.name)],
        )
    edit = ListEdit(
        list_name=target.name,
        add=list(command.add),
        remove=list(command.remove),
        clear=command.clear,
        create=target.create,
    )
    change = preview(store.as_read(target.name), edit)
    log.info(
        "list change intended",
        extra=fields(
            list=change.named.name,
            created=change.created,
            added=len(change.added),
            removed=len(change.removed),
            cleared=change.cleared,
        ),
    )
    # Crossed off without naming a list, and on none of them: say that, not one list's name.
    anywhere = not command.list_name and len(existing) > 1
    return AgentResult(
        agent=AGENT,
        task=task,
        outcome="completed",
        said=describe(change, command.show, language, anywhere=anywhere),
        effects=[edit],
    )


def resolve(command: ListCommand, existing: list[NamedList], answer: str = "") -> Target | None:
    """Which list the command means (see the module docstring); None: ask the user."""
    named = find(existing, command.list_name) if command.list_name else None
    if named is None and answer:
        named = mentioned(existing, answer)
    if named is None and not command.list_name and command.remove and not command.add:
        named = holding(existing, command.remove)
    if named is not None:
        return Target(named.name, create=False)
    adds = bool(command.add) or command.create_list
    if command.list_name and adds and (command.create_list or not existing):
        return Target(" ".join(command.list_name.split()), create=True)
    if not command.list_name and len(existing) == 1:
        return Target(existing[0].name, create=False)
    if command.list_name and not adds:
        return Target(" ".join(command.list_name.split()), create=False)  # reported missing
    return None


def find(existing: list[NamedList], name: str) -> NamedList | None:
    wanted = normalize(name)
    return next((item for item in existing if normalize(item.name) == wanted), None)


def holding(existing: list[NamedList], items: list[str]) -> NamedList | None:
    """The list the items are to come off: the one list that has them all, or of several
    the one changed last (it is what the conversation is about); none has them all: the one
    that has most of them, else the list changed last."""
    if not existing:
        return None
    wanted = {normalize(item) for item in items}

    def held(item: NamedList) -> int:
        return len(wanted & {normalize(i) for i in item.items})

    recent = sorted(existing, key=lambda item: item.updated_at)
    return max(recent, key=lambda item: (held(item), item.updated_at))


def mentioned(existing: list[NamedList], text: str) -> NamedList | None:
    """The one existing list whose name the text mentions (None when none or several)."""
    lowered = normalize(text)
    hits = [item for item in existing if normalize(item.name) in lowered]
    return hits[0] if len(hits) == 1 else None


def resumed(answer: ListCommand, pending: AgentContext) -> ListCommand:
    """The original command with what the user's answer adds (a list name, "new list")."""
    original = original_command(pending, ListCommand, AGENT)
    if original is None:
        return answer
    has_ops = answer.add or answer.remove or answer.show or answer.clear
    base = answer if has_ops else original
    return msgspec.structs.replace(
        base,
        list_name=answer.list_name or original.list_name,
        create_list=answer.create_list or (base.create_list and not answer.list_name),
    )


def _ask(
    ctx: NodeContext,
    state: Path2State,
    task: str,
    command: ListCommand,
    existing: list[NamedList],
    pending: AgentContext | None,
) -> AgentResult:
    words = _phrases(reply_language(ctx, state))
    names = join([words["quote"].format(name=item.name) for item in existing], words["or"])
    if not existing:
        question = words["name_it"]
    elif command.list_name:
        question = words["which_new"].format(name=command.list_name, names=names)
    else:
        question = words["which"].format(names=names)
    return follow_up(
        AGENT, state, task, command, pending, question, candidates=[item.name for item in existing]
    )


def describe(change: ListChange, show: bool, language: str, *, anywhere: bool = False) -> list[str]:
    """What the change did, in sentences that agree with their items ("Eier sind
    gestrichen"); `anywhere`: items missing are on none of the lists."""
    words = _phrases(language)
    name = change.named.name
    said = []
    if change.created and not change.added:
        said.append(words["created"].format(name=name))
    if change.cleared:
        said.append(words["cleared"].format(name=name))
    missing = "missing_anywhere" if anywhere else "missing"
    for key, items in (
        ("removed", change.removed),
        (missing, change.missing),
        ("added", change.added),
        ("already", change.already),
    ):
        if items:
            agreeing = f"{key}_many" if several(items, language) else key
            said.append(
                sentence(words[agreeing].format(items=join(items, words["and"]), name=name))
            )
    if show:
        items = change.named.items
        said.append(
            words["shows"].format(name=name, items=", ".join(items))
            if items
            else words["empty"].format(name=name)
        )
    return said


def show_all(existing: list[NamedList], language: str) -> list[str]:
    words = _phrases(language)
    if not existing:
        return [words["no_lists"]]
    return [
        words["shows"].format(name=item.name, items=", ".join(item.items))
        if item.items
        else words["empty"].format(name=item.name)
        for item in existing
    ]


def lists_text(existing: list[NamedList], language: str) -> str:
    """The lists as the model sees them: every list whole, with every item; the one changed
    last comes last ("put it on there too" means that one)."""
    empty = _phrases(language)["none"]
    ordered = sorted(existing, key=lambda item: item.updated_at)
    return "\n".join(
        f"- {item.name}: {', '.join(item.items) if item.items else empty}" for item in ordered
    )


def _phrases(language: str) -> Mapping[str, str]:
    return texts("lists", language)
