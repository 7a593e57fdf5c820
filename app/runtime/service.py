"""The runtime's cleanup context: hub, run slots, runtime, keeper, recovery — up in that
order, down in reverse.

Recovery runs after the heartbeat is written and before the app serves a request, so a
restarted process first closes or retries what a crash left open, then accepts new input.
With an external Redis (`redis_url`) the hub fans out through Redis, the run slots live in
Redis, and a wake listener plus an orphan sweep let several processes share the pairs.
"""

from __future__ import annotations

import gc
import logging
import uuid
from collections.abc import AsyncIterator

from aiohttp import web

from app.log import fields
from app.runtime.hub import Hub
from app.runtime.keeper import Keeper
from app.runtime.recovery import recover
from app.runtime.runtime import Runtime
from app.runtime.slots import LocalSlots, RedisSlots
from app.typedefs import GATEWAY, HUB, PIPELINES, REDIS, RUNTIME, SETTINGS

log = logging.getLogger(__name__)


async def runtime_ctx(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS]
    redis = app[REDIS]
    distributed = settings.redis_url is not None
    hub = Hub(settings.ws_send_queue, redis if distributed else None,
              max_per_user=settings.max_sockets_per_user)
    instance_id = uuid.uuid4().hex[:12]
    slots = (RedisSlots(redis, settings.graph_slots, settings.lock_wait_timeout,
                        lease_seconds=3 * settings.turn_marker_refresh_seconds,
                        instance_id=instance_id) if distributed
             else LocalSlots(settings.graph_slots, settings.lock_wait_timeout))
    runtime = Runtime(redis=redis, settings=settings, hub=hub, slots=slots,
                      pipelines=app[PIPELINES], gateway=lambda: app.get(GATEWAY),
                      instance_id=instance_id)
    keeper = Keeper(runtime)
    app[HUB] = hub
    app[RUNTIME] = runtime
    await hub.start()
    await keeper.start()
    report = await recover(runtime, only_dead_owners=distributed)
    freeze_startup_objects()
    log.info("runtime started", extra=fields(
        instance=runtime.instance_id, distributed=distributed, graph_slots=settings.graph_slots,
        woken_pairs=report.woken_pairs))
    try:
        yield
    finally:
        gc.unfreeze()
        await runtime.stop()
        await keeper.stop()
        await hub.stop()


def freeze_startup_objects() -> None:
    """Keep the garbage collector's full sweeps short (the loop must not stall, SPEC §10).

    A full collection walks every tracked object; the imports and the start-up leave some
    hundred thousand of them, and one such walk took ~70 ms in the middle of a busy loop.
    `gc.freeze` moves what exists now out of the collector's walks (it stays alive, as it
    would anyway); everything allocated later is collected as usual. Undone at shutdown so a
    process that builds several apps (the tests) does not keep their objects.
    """
    gc.collect()
    gc.freeze()


async def close_websockets(app: web.Application) -> None:
    """on_shutdown: close every WebSocket so the server does not wait for them."""
    hub = app.get(HUB)
    if hub is not None:
        await hub.close_all()
