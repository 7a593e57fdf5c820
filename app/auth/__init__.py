"""Who may use the app: accounts (users, password hashes, API tokens), login sessions and
start codes, login throttling, and the Host/Origin rules (design §1, §9). The HTTP face of
it — the middleware that sets the request's user — is `app.api.middleware`."""
