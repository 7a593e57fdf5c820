"""The turn runtime (design §5, seed 001): accept, prompt and event consumers, run lock,
lifecycle records, delivery hub, recovery.

Modules: `runtime` (the front: accept, impulses, the reconnect snapshot, session reset),
`consumer` (one task per active pair: block cutting, event taking), `turns` (path 1, path 2,
delivery and failure of one turn), `minimal` (the minimal real pipelines), `events`
(producers and the reliable event queue), `records` (turn and message records, atomic
transitions), `blocks` (cutting the front block), `markers` (the pair lock: the turn
markers), `slots` (the run lock), `hub` (WebSocket fan-out), `keeper` (heartbeat, marker
refresh, multi-process wake-ups), `recovery`, `ratelimit`, `wire` (stored records and
WebSocket messages). The interface path 1 and path 2 implement is
`app.pipeline.vocabulary`. The wiring (`app.wiring.server.runtime_ctx`) builds and starts them.
"""
