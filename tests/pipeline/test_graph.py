"""A path run's figures come back as a value (`GraphRun`), not only as a log line: the
pipeline host hands each completed run to its `on_path_run` observer (`app[PATH_RUN_OBSERVER]`,
bench/turn.py's source), with the turn it belongs to, the nodes that ran and the model calls they made."""

from __future__ import annotations

from app.api.app_keys import PATH_RUN_OBSERVER
from app.pipeline.graph import GraphRun
from tests.pipeline_support import open_chat


async def test_every_path_run_reaches_the_observer(app, aiohttp_client):
    runs: list[GraphRun] = []
    app[PATH_RUN_OBSERVER] = runs.append
    chat = await open_chat(aiohttp_client, app)

    message_id = await chat.send("Wie war dein Tag?")
    answer = await chat.response(message_id)
    await chat.settle()

    assert [run.path for run in runs] == ["path1", "path2"]
    assert {run.turn_id for run in runs} == {answer["turn_id"]}
    path1, path2 = runs
    assert "perception" in path1.nodes and "responder" in path2.nodes
    assert [purpose for purpose, _ in path1.model_calls][0] == "perception"
    assert "responder" in [purpose for purpose, _ in path2.model_calls]
    for run in runs:
        assert all(ms >= 0 for ms in run.nodes.values())
        assert 0 <= run.model_ms <= run.total_ms
        assert run.overhead_ms == run.total_ms - run.model_ms
    await chat.close()
