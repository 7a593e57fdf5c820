# Two commands on a fresh machine: `make run` and `make test`. Everything else is optional.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-test
PYTEST := $(PY) -m pytest

.PHONY: run install lock upgrade lint node test test-postgres test-peer test-browser binary binary-test bench \
	bench-scaleout bench-peer clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# Every install goes through a lock in requirements/ (each transitive pin with its hashes, so
# a release made since the lock cannot change a fresh clone); the project itself goes in
# editable, without dependencies and without a build environment of its own (setuptools is
# pinned in the lock). `make lock` writes the locks anew after pyproject.toml changed, keeping
# every pin it can; `make upgrade` moves every pin to the newest release and runs the suite.
LOCK_GROUPS := app test postgres browser build peer
define install_lock
	$(PY) -m pip install -q --require-hashes --no-deps -r requirements/$(1).txt
endef

$(STAMP): pyproject.toml requirements/test.txt | $(PY)
	$(call install_lock,test)
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	touch $@

install: $(STAMP)

run: install
	$(VENV)/bin/novaberg $(ARGS)

# Two test processes (pytest-xdist), a file each at a time: the suite is mostly waiting on
# subprocesses and sockets, and the two cores of CI are both used. tests/procs.free_port gives
# each process its own port range.
test: install node
	$(PYTEST) -q -n 2 --dist loadfile

# The storage-touching suites again with the durable store in PostgreSQL (`--engine=postgresql`):
# the test session starts Debian's server itself in a temp dir (tests/postgres_support.py), one
# per test process. Tests that hold only what SQLite has are marked `sqlite_only` and left out.
POSTGRES_SUITES := tests/auth tests/memory tests/journal tests/llm/privacy tests/profiles \
	tests/api tests/backup tests/storage tests/runtime tests/characters tests/impulses \
	tests/test_scenarios.py tests/bench/test_scaleout.py tests/wiring/test_cli.py \
	tests/wiring/test_cli_accounts.py tests/wiring/test_cli_shared_store.py \
	tests/wiring/test_compose_start.py tests/wiring/test_files_dir.py tests/wiring/test_server.py \
	tests/pipeline/test_log.py tests/pipeline/test_commands.py \
	tests/pipeline/test_changes_by_chat.py tests/pipeline/test_thinker.py
test-postgres: install
	@command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql; }
	$(call install_lock,postgres)
	$(PYTEST) -q -p no:randomly -n 2 --dist loadfile --engine=postgresql $(POSTGRES_SUITES)

# node's built-in test runner for the UI's DOM-free modules (tests/js/, run by tests/web/test_js.py).
node:
	@command -v node >/dev/null || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs; }

# The real llama.cpp server as a peer of the model gateway (builds llama-cpp-python once).
test-peer: install
	$(call install_lock,peer)
	$(PYTEST) -q -o addopts='' tests/peer

# The web UI in Debian's chromium (from apt; Playwright's own browser download is not used),
# driven by Playwright.
test-browser: install
	@if [ ! -x /usr/bin/chromium ]; then \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; fi
	$(call install_lock,browser)
	$(PYTEST) -q -o addopts='' tests/browser

binary: install
	$(call install_lock,build)
	$(PY) -m PyInstaller --noconfirm --clean --log-level WARN build.spec

binary-test: binary
	$(PYTEST) -q -o addopts='' tests/wiring/test_binary.py

bench: install
	$(PY) bench/startup.py
	$(PY) bench/gateway.py
	$(PY) bench/runtime.py
	$(PY) bench/turn.py
	$(PY) bench/reply.py --turns 4 --scale 0.5
	$(PY) bench/profile.py
	$(PY) bench/journal.py
	$(PY) bench/privacy.py
	$(PY) bench/memory.py
	$(PY) bench/lore.py
	$(PY) bench/history.py
	$(PY) bench/backup.py
	$(PY) bench/exports.py
	$(PY) bench/uploads.py
	$(PY) bench/loopstall.py

# bench/reply.py against the real llama.cpp peer of `make test-peer` (builds llama-cpp-python
# once): the share of each turn's prompt tokens the server itself served from its cache.
bench-peer: install
	$(call install_lock,peer)
	$(PY) bench/reply.py --peer --turns 12

# N processes on one PostgreSQL and one Redis (issue 26): the burst with a kill -9 for
# N = 1, 2, 3 and the 10 000-turn soak, some minutes each, so not part of `make bench`.
bench-scaleout: install
	$(call install_lock,postgres)
	$(PY) bench/scaleout.py burst
	$(PY) bench/scaleout.py soak

# The house's checks over the program's code (config in pyproject.toml): ruff's lint and its
# format check, and mypy. .ci/run runs them before the suite.
LINTED := app statemachine
lint: install
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/ruff format --check $(LINTED)
	$(VENV)/bin/mypy $(LINTED)

# The locks, one per install: app (what the program needs), test (+ the suite's and the
# house's tools), and one per slow suite on top of test. Each is resolved for every platform
# and Python the project supports, the groups constrained by test so they agree on each pin.
UV_COMPILE = $(VENV)/bin/uv pip compile pyproject.toml --universal --python-version 3.11 \
	--generate-hashes --custom-compile-command 'make lock' --quiet $(UV_FLAGS)
lock: install
	$(UV_COMPILE) -o requirements/app.txt
	$(UV_COMPILE) --extra test --extra dev -c requirements/app.txt -o requirements/test.txt
	for extra in postgres browser build peer; do \
		$(UV_COMPILE) --extra test --extra dev --extra $$extra -c requirements/test.txt \
			-o requirements/$$extra.txt || exit 1; done

upgrade:
	$(MAKE) lock UV_FLAGS=--upgrade
	$(MAKE) test

clean:
	rm -rf build dist .pytest_cache
