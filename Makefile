# GroupChat Lab: `make run` starts the dashboard, `make test` runs the whole suite.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PORT ?= 8501

.PHONY: setup browser postgres llm-setup llm run test typecheck lint bench clean
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

setup: $(STAMP)

$(STAMP): requirements.txt requirements-dashboard.txt requirements-ray.txt requirements-traces.txt requirements-mlflow.txt \
		requirements-dev.txt constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check \
		-r requirements.txt -r requirements-dashboard.txt -r requirements-ray.txt \
		-r requirements-traces.txt \
		-r requirements-mlflow.txt -r requirements-dev.txt -c constraints.txt
	@touch $(STAMP)

run: setup
	@echo "GroupChat Lab on http://127.0.0.1:$(PORT)  (offline sim models; $$($(BIN)/python -m groupchat_core --version | grep '^data: '))"
	$(BIN)/python -m groupchat_ui.kit.server run streamlit_app.py --server.headless true \
		--server.address 127.0.0.1 --server.port $(PORT)

# Browser tests drive Debian's chromium (never a downloaded browser build).
browser:
	@command -v chromium >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-dejavu-core; }

# The store's PostgreSQL tests start a throwaway server of their own from Debian's binaries
# (tests/helpers/pg.py). The packaged cluster and its service are never used: where the package cannot
# start its service (a container without systemd), the install still counts once initdb is in.
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		{ $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends postgresql || \
		ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; }; }

# A real local LLM (SmolLM2-135M behind llama.cpp's OpenAI-compatible server), built once per
# machine outside the repo (GROUPCHAT_LLM_HOME, default ~/.cache/groupchat-lab/local-llm).
llm-setup: setup
	@$(BIN)/python -c "from groupchat_core.testing._local_llm import is_installed; \
		raise SystemExit(not is_installed())" || $(BIN)/python -m groupchat_core.testing.local_llm install

llm: llm-setup
	$(BIN)/python -m groupchat_core.testing.local_llm serve --port 8080

# The whole suite on TEST_WORKERS pytest-xdist workers, a module (or a group: one Ray cluster,
# one local LLM at a time) per work unit; see tests/helpers/kinds.py. TEST_WORKERS unset: one
# per core, one more where the cores are fast (tests/helpers/workers.py says why). The log ends
# with the 30 slowest tests (--durations), where to look when the suite grows slow.
# Python keeps its bytecode caches (git-ignored __pycache__/) during the suite even where the
# machine sets PYTHONDONTWRITEBYTECODE: every worker, app server and CLI subprocess would
# otherwise compile the project again (collecting the suite: 13.4 s without, 7.5 s with).
TEST_WORKERS ?=
KEEP_BYTECODE := PYTHONDONTWRITEBYTECODE=

test: setup browser postgres llm-setup
	$(BIN)/ruff check .
	$(BIN)/mypy
	workers=$(TEST_WORKERS); workers=$${workers:-$$($(BIN)/python -m tests.helpers.workers)} && \
		$(KEEP_BYTECODE) $(BIN)/python -m pytest -n $$workers --dist loadgroup --durations=30

lint: setup
	$(BIN)/ruff check .

typecheck: setup
	$(BIN)/mypy

bench: setup
	$(BIN)/python -m bench.engine
	$(BIN)/python -m bench.store

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
