# Two entry points for a fresh machine: `make demo` (set up, run a passing and a failing
# certification on GPU nodes of this machine, real or simulated) and
# `make test` (set up, build or reuse the test control plane, run every test).
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin

.PHONY: setup demo demo-offline controlplane go-tools image test-tools test test-fast lint typecheck golden-update snapshots clean

# What ruff checks; mypy checks the installed package `nvcre` (settings in pyproject.toml).
LINT_PATHS := compiler runtime cli testing pkg catalog platforms tests benchmarks scripts images
MYPY_TREE := build/mypy-tree

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

# Builds (or reuses) the cluster binaries, then runs a PASSED and a FAILED certification on two real
# nodes where the machine allows them (root, cgroups, the system tools), else on the simulated GPU
# cluster, saying which and why (scripts/demo.sh; NVCRE_DEMO=real|sim chooses by hand).
demo: setup controlplane
	NVCRECTL=$(BIN)/nvcrectl scripts/demo.sh

# Offline only: list the catalog and render the example Certification (no cluster, no Go).
demo-offline: setup
	$(BIN)/nvcrectl certification list-categories
	$(BIN)/nvcrectl certification render examples/certification.yaml --platform onprem --gpu-arch gb300

# --real: kubelet, kube-proxy, the CNI plugins, CoreDNS, the sandbox program and the GPU device
# plugin that the real-node tests run (docs/simcluster.md, "Real nodes").
controlplane: setup
	$(BIN)/python -m nvcre.testing.gobuild.build --optional --sim --real

# The tools some tests run, each built from its Go module into the same cache: helm (chart
# tests), prometheus and promtool (alert rules, the scrape test), cosign (evidence bundles).
go-tools: setup
	$(BIN)/python -m nvcre.testing.gobuild.build --optional --tools-only --tools helm,prometheus,cosign

# The controller image, built without a registry: a Debian base (mmdebstrap), the Containerfile
# (buildah), an OCI layout in build/image/oci (skopeo) and its SBOM. Needs root; prints the digest.
image: setup test-tools
	$(BIN)/python scripts/image.py

# Debian's buildah, podman, skopeo, mmdebstrap and runc (the image), chromium (the HTML report's
# browser test) and containerd, iproute2, iptables (the real nodes), installed when missing (root only).
test-tools:
	scripts/test-tools.sh

test: setup lint typecheck controlplane go-tools test-tools
	$(BIN)/python -m pytest

# The quick lane for local work: lint, types, and every test not marked integration or slow,
# spread over the machine's cores (pytest-xdist). The full lane stays serial.
test-fast: setup lint typecheck
	$(BIN)/python -m pytest -q -n auto -m "not integration and not slow"

lint: setup
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)

# The source folders are not named after their packages (compiler/ is nvcre.compiler), so mypy
# reads them through a tree of links laid out as the installed package.
typecheck: setup
	$(BIN)/python scripts/package_tree.py $(MYPY_TREE) >/dev/null
	MYPYPATH=$(MYPY_TREE) $(BIN)/mypy $(MYPY_ARGS)

golden-update: setup snapshots
	$(BIN)/python -m pytest tests/compiler/test_render_golden.py tests/compiler/test_workloadrun_golden.py tests/compiler/test_render_golden_platforms.py --update-golden

# After editing catalog/, platforms/ or the CRDs: rebuild the data the render ships pre-parsed
# (the render stays correct without it, only slower; staleness tests say when it is due).
snapshots: setup
	$(BIN)/python -m nvcre.compiler.cel_tables --write
	$(BIN)/python -m nvcre.compiler.snapshot_build --write

clean:
	rm -rf $(VENV) build dist *.egg-info
	find golden -name '*.actual' -delete
