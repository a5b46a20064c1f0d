# GroupChat Lab: `make run` starts the dashboard, `make test` runs the whole suite.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PORT ?= 8501

.PHONY: setup browser run test lint bench clean
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

setup: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check \
		-r requirements.txt -r requirements-dev.txt -c constraints.txt
	@touch $(STAMP)

run: setup
	@echo "GroupChat Lab on http://127.0.0.1:$(PORT)  (offline sim models, SQLite in data/)"
	$(BIN)/streamlit run streamlit_app.py --server.headless true \
		--server.address 127.0.0.1 --server.port $(PORT)

# Browser tests drive Debian's chromium (never a downloaded browser build).
browser:
	@command -v chromium >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium fonts-dejavu-core; }

test: setup browser
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

lint: setup
	$(BIN)/ruff check .

bench: setup
	$(BIN)/python -m bench.engine
	$(BIN)/python -m bench.store

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
