"""The turn runtime (SPEC §5, seed 001): accept, prompt and event consumers, run lock,
lifecycle records, delivery hub, recovery.

Modules: `runtime` (accept, the per-pair consumer, turn execution), `pipelines` (the
interface path 1 and path 2 implement), `minimal` (the minimal real pipelines), `events`
(producers and the reliable event queue), `records` (turn and message records, atomic
transitions), `blocks` (cutting the front block), `markers` (the turn marker), `slots` (the
run lock), `hub` (WebSocket fan-out), `keeper` (heartbeat, marker refresh, multi-process
wake-ups), `recovery`, `characters` (the known characters), `ratelimit`, `wire` (stored
records and WebSocket messages), `service` (the cleanup context).
"""
