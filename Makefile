# epochsim: the two commands of the README, and their parts.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test venv java chromium lint clean

# Set up and run the main job: the scenario suite and a small Spark sweep, with their reports.
demo: $(STAMP) java
	$(PY) -m epochsim suite scenarios/ --seeds 3 --out runs/demo/suite
	$(PY) -m epochsim report runs/demo/suite -o runs/demo/suite/report.html
	$(PY) -m epochsim sweep scenarios/sweeps/demo.toml --out runs/demo/sweep --resume
	$(PY) -m epochsim report runs/demo/sweep -o runs/demo/sweep/report.html
	@echo "reports: runs/demo/suite/report.html  runs/demo/sweep/report.html"

# Set up and run the tests (lint, unit, scenario, determinism, property and self tests).
test: $(STAMP) java chromium
	$(VENV)/bin/ruff check .
	$(VENV)/bin/pytest

venv: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' || \
	  { echo "epochsim needs Python >= 3.11 (found: $$($(PYTHON) --version 2>&1)); pass PYTHON=python3.11"; exit 2; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	@touch $(STAMP)

# PySpark needs a Java runtime (17 or 21).
java:
	@command -v java >/dev/null 2>&1 || { echo "Java is missing: PySpark needs a Java 17 runtime. Install it (Debian/Ubuntu: sudo apt-get install -y openjdk-17-jre-headless) or set JAVA_HOME, then rerun."; exit 2; }

# Headless Chromium for the report rendering test (Debian package `chromium`).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || \
	      echo "note: could not install chromium; the browser rendering test will be skipped"; \
	  else echo "note: chromium not installed (apt-get install chromium); the browser rendering test will be skipped"; fi; }

lint: $(STAMP)
	$(VENV)/bin/ruff check .

clean:
	rm -rf runs build *.egg-info
