"""Running a path: a readable list of nodes over one typed state.

    PATH1 = (Node("state", load_session), Node("perception", perceive), …)
    run = await run_graph("path1", PATH1, ctx, state)

Each node is a small async function `(ctx, state) -> None` that reads and fills the state.
A node with a `when` predicate runs only when it holds (the planner runs only when the
router asked for an action). Before a node runs, its name goes to the run's stage callback
(`ctx.stage`: the runtime pushes it to every tab of the user as `character_stage`, a stage
id of `app.pipeline.stages`); after the path, one log line names every node's time and
every model call, and the same figures come back as a `GraphRun`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from app.core.log import fields
from app.pipeline.context import NodeContext

log = logging.getLogger(__name__)

S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class Node(Generic[S]):
    name: str
    run: Callable[[NodeContext, S], Awaitable[None]]
    when: Callable[[S], bool] | None = None


@dataclass(frozen=True, slots=True)
class GraphRun:
    """What one path run took: node times (ms) and model calls (purpose, seconds). The
    pipeline host hands each one to its `on_path_run` observer (bench/turn.py)."""

    path: str
    turn_id: str
    nodes: dict[str, float]
    model_calls: list[tuple[str, float]]
    total_ms: float

    @property
    def model_ms(self) -> float:
        return sum(seconds for _, seconds in self.model_calls) * 1000

    @property
    def overhead_ms(self) -> float:
        return self.total_ms - self.model_ms


async def run_graph(
    path: str, nodes: Sequence[Node[S]], ctx: NodeContext, state: S, *, turn_id: str
) -> GraphRun:
    started = time.perf_counter()
    first_call = len(ctx.calls)
    timings: dict[str, float] = {}
    for node in nodes:
        if node.when is not None and not node.when(state):
            continue
        await ctx.stage(node.name)
        node_started = time.perf_counter()
        await node.run(ctx, state)
        timings[node.name] = round((time.perf_counter() - node_started) * 1000, 3)
    calls = [(c.purpose, c.seconds) for c in ctx.calls[first_call:]]
    run = GraphRun(
        path=path,
        turn_id=turn_id,
        nodes=timings,
        model_calls=calls,
        total_ms=(time.perf_counter() - started) * 1000,
    )
    log.info(
        "path run",
        extra=fields(
            path=path,
            nodes=timings,
            model_calls=[purpose for purpose, _ in calls],
            model_ms=round(run.model_ms, 3),
            total_ms=round(run.total_ms, 3),
        ),
    )
    return run
