# epochsim: the two commands of the README, and their parts.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test venv java chromium lint clean

# Set up and run the main job: the scenario suite and a small Spark sweep, with their reports.
demo: java $(STAMP)
	$(PY) -m epochsim suite scenarios/ --seeds 3 --out runs/demo/suite
	$(PY) -m epochsim report runs/demo/suite -o runs/demo/suite/report.html
	$(PY) -m epochsim sweep scenarios/sweeps/demo.toml --out runs/demo/sweep --resume
	$(PY) -m epochsim report runs/demo/sweep -o runs/demo/sweep/report.html
	@echo "reports: runs/demo/suite/report.html  runs/demo/sweep/report.html"

# Set up and run the tests (lint, unit, scenario, determinism, property and self tests), on
# every core (TEST_WORKERS=0 runs them in this one process).
TEST_WORKERS ?= auto
test: java chromium $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/pytest -n $(TEST_WORKERS)

venv: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' || \
	  { echo "epochsim needs Python >= 3.11 (found: $$($(PYTHON) --version 2>&1)); pass PYTHON=python3.11"; exit 2; }
	@echo "setting up $(VENV): epochsim and its dependencies (PySpark, matplotlib, hypothesis, ...; about 1 GB, a few minutes)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --progress-bar on -e ".[dev]"
	@touch $(STAMP)

# PySpark needs a Java 17+ runtime ($JAVA_HOME/bin/java, else java on PATH); checked before the
# install, so a missing Java is said at once.
java:
	@./.ci/java-check

# Headless Chromium for the report rendering test (Debian package `chromium`).
# As root with apt-get, it is installed (saying so, with apt-get's own output); otherwise the
# browser test is skipped, and this says how to install it.
chromium:
	@if command -v chromium >/dev/null 2>&1; then echo "chromium: $$(command -v chromium)"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing chromium for the report rendering test: apt-get install -y chromium"; \
	  (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium) || \
	    echo "note: could not install chromium; the browser rendering test will be skipped"; \
	else echo "note: chromium not installed (sudo apt-get install -y chromium); the browser rendering test will be skipped"; fi

lint: $(STAMP)
	$(VENV)/bin/ruff check .

clean:
	rm -rf runs build *.egg-info
