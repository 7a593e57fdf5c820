"""`python -m app`, and the one-file binary's entry (build.spec).

Guarded, because a process started with `spawn` (the card reader, `app.characters.apart`)
imports the parent's main module again, as `__mp_main__`: it must not start the CLI there.
`freeze_support` makes the frozen binary, started as such a process, run the worker it was
started for instead of the CLI."""

import multiprocessing

from app.wiring.cli import main

if __name__ == "__main__":
    multiprocessing.freeze_support()
    raise SystemExit(main())
