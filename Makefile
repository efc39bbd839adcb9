# The habits of this project. `make run` and `make test` work on a fresh
# machine with Python 3.11+, a C compiler and make: they create the virtual
# environment and build the kernel themselves.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.neardup-installed
SOURCES := $(shell find app native -type f -not -path '*/__pycache__/*' -not -path 'native/build/*' -not -name '_native*' -not -name '*.so') pyproject.toml setup.py constraints.txt
HOST ?= 127.0.0.1
PORT ?= 8000
PYTEST_ARGS ?=
# The suite runs on this many pytest-xdist workers (each with its own redis-server and,
# when a test asks, its own cluster); 0 runs it in this process alone.
TEST_WORKERS ?= 2

.PHONY: venv install lock run test docs screenshots sanitize lint bench clean

$(BIN)/python:
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "neardup needs Python 3.11+"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

venv: $(BIN)/python

# Non-editable install: the tests run against the installed package and its
# compiled kernel, exactly as a user gets it, with the versions constraints.txt
# pins (the same file CI and the Docker build use).
$(STAMP): $(BIN)/python $(SOURCES)
	@# setuptools never prunes build/: a moved module would ship twice.
	rm -rf build
	$(BIN)/pip install -q -c constraints.txt '.[test]'
	touch $@

install: $(STAMP)

# Re-resolve every dependency within pyproject.toml's bounds, in a scratch
# environment, and pin the result in constraints.txt (review the diff, then
# `make test`).
lock:
	rm -rf build .lock-venv
	$(PYTHON) -m venv .lock-venv
	.lock-venv/bin/pip install -q --upgrade pip
	.lock-venv/bin/pip install -q '.[test]'
	{ echo '# Every dependency of neardup and its test extra, as resolved by `make lock`.'; \
	  echo '# Used by `make install`/`make test`, CI (.ci/run runs make) and docker/Dockerfile.'; \
	  .lock-venv/bin/pip freeze --exclude neardup | LC_ALL=C sort -f; } > constraints.txt
	rm -rf .lock-venv build

run: $(STAMP)
	$(BIN)/neardup serve --host $(HOST) --port $(PORT)

# pytest is run from its own entry point, not `python -m`, so the source
# tree's app/ (which has no compiled kernel) never shadows the installed one.
# Workers steal tests from each other's queues, so the long ones (a kill -9 mid-ingest,
# the stateful phase) do not leave one worker idle at the end.
test: $(STAMP)
	$(BIN)/pytest -n $(TEST_WORKERS) --dist worksteal $(PYTEST_ARGS)
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || echo "!!! THE BROWSER SUITES (tests/test_ui_browser.py, tests/test_ui_checks.py) DID NOT RUN: chromium is missing; install it with: apt-get install -y chromium"

# The documentation site (mkdocs.yml, docs/) into site/. Its tools live in their own
# environment, .venv-docs, from the pins of docs/requirements.txt, so `make test`'s
# .venv carries none of them. --strict: a broken link, anchor or snippet fails; the
# README's own links into docs/ are checked by docs/readme_links.py.
DOCS_VENV ?= .venv-docs
DOCS_STAMP := $(DOCS_VENV)/.neardup-docs-installed

$(DOCS_STAMP): docs/requirements.txt
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "neardup needs Python 3.11+"'
	$(PYTHON) -m venv $(DOCS_VENV)
	$(DOCS_VENV)/bin/pip install -q --upgrade pip
	$(DOCS_VENV)/bin/pip install -q -r docs/requirements.txt
	touch $@

docs: $(DOCS_STAMP)
	$(DOCS_VENV)/bin/python docs/readme_links.py README.md
	NO_MKDOCS_2_WARNING=1 $(DOCS_VENV)/bin/mkdocs build --strict --clean --site-dir site

# The README's screenshots of the report page (check, source and collection views).
screenshots: $(STAMP)
	NEARDUP_SCREENSHOTS=$(CURDIR)/docs NEARDUP_REQUIRE_BROWSER=1 $(BIN)/pytest -q tests/test_ui_browser.py -k screenshots

sanitize: $(STAMP)
	bash native/sanitize.sh $(BIN)/python

lint: $(STAMP)
	$(BIN)/ruff check app tests bench native
	$(BIN)/ruff format --check app tests bench native
	$(BIN)/mypy app

bench: $(STAMP)
	$(BIN)/python bench/kernel.py
	$(BIN)/python bench/service.py
	$(BIN)/python bench/paced.py
	$(BIN)/python bench/cluster.py
	$(BIN)/python bench/passages.py
	$(BIN)/python bench/hotband.py
	$(BIN)/python bench/html_in.py
	$(BIN)/python bench/alignment.py --bits 0,8 --scale 10000 100000
	$(BIN)/python bench/sources.py
	$(BIN)/python bench/templates.py
	$(BIN)/python bench/languages.py
	$(BIN)/python bench/formats.py
	$(BIN)/python bench/unseen.py
	$(BIN)/python bench/issue.py

clean:
	rm -rf $(VENV) .lock-venv build dist *.egg-info native/build $(DOCS_VENV) site
