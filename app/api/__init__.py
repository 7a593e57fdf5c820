"""HTTP and WebSocket handlers: validate, call, answer. No prompts, no Redis keys here.

`routes.setup_routes` adds every handler module's routes; `app_keys` names what the app object
carries; `middleware` and `errors` are the request's way in and the one error shape out.
"""
