# Two entry points for a fresh machine: `make demo` (set up, render the examples offline) and
# `make test` (set up, build or reuse the test control plane, run every test).
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin

.PHONY: setup demo controlplane test golden-update clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

demo: setup
	$(BIN)/nvcrectl certification list-categories
	$(BIN)/nvcrectl certification render examples/certification.yaml --platform onprem --gpu-arch gb300

controlplane: setup
	$(BIN)/python tests/controlplane/build.py --optional

test: setup controlplane
	$(BIN)/python -m pytest

golden-update: setup
	$(BIN)/python -m pytest tests/test_golden_render.py tests/test_golden_workloadrun.py tests/test_golden_platforms.py --update-golden

clean:
	rm -rf $(VENV) build dist *.egg-info
	find golden -name '*.actual' -delete
