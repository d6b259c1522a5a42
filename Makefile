# Ember: the two quick-start commands are `make demo` and `make test`; both install what they need.
#
#   make demo        build and run the first example (examples/01_first_program.py)
#   make test        C++ tests (ctest) and Python tests (pytest), small rings
#   make test-slow   the large-parameter tests (N = 2^16)
#   make bench       `ember bench all` at N = 2^16
#   make peers       side-by-side timings against OpenFHE and DESILO (bench/peers/)

PYTHON  ?= python3
VENV    := build/venv
PY      := $(VENV)/bin/python
JOBS    ?= $(shell nproc)
APT_PKGS := cmake g++ make libssl-dev libgmp-dev libgtest-dev python3-venv python3-dev
PY_PKGS  := numpy rich pytest scikit-build-core nanobind matplotlib "dask[distributed]"

.PHONY: demo test test-slow test-cpp test-python bench peers deps apt-deps py-deps install clean

demo: install
	$(PY) examples/01_first_program.py

test: test-cpp test-python

test-cpp: apt-deps
	cmake -S . -B build/cpp -DCMAKE_BUILD_TYPE=Release -DEMBER_TESTS=ON > /dev/null
	cmake --build build/cpp -j$(JOBS) --target ember_tests
	cd build/cpp && ctest --output-on-failure -j$(JOBS)

test-python: install
	$(PY) -m pytest -q tests/python

test-slow: install
	$(PY) -m pytest -q -m slow tests/python

bench: install
	$(VENV)/bin/ember bench all --log-n 16 --levels 24 --dnum 3 --threads 2 --runs 10

# OpenFHE's wheel holds a CPython 3.10 module only: it runs under python3.10 when one is found
# (OPENFHE_PYTHON=/path/to/python3.10 to choose), else the script reports it as missing.
OPENFHE_PYTHON ?= $(shell command -v python3.10 2>/dev/null || ls /root/.pyenv/versions/3.10*/bin/python 2>/dev/null | head -n1)
peers: install
	$(PY) -m pip install -q --disable-pip-version-check desilofhe
	@if [ -n "$(OPENFHE_PYTHON)" ]; then $(OPENFHE_PYTHON) -m pip install -q --disable-pip-version-check openfhe numpy; fi
	OPENFHE_PYTHON=$(OPENFHE_PYTHON) $(PY) bench/peers/compare_peers.py

# --- dependencies ------------------------------------------------------------------------------
deps: apt-deps py-deps

# Debian packages, installed only when one is missing (needs root or sudo).
apt-deps:
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

$(PY):
	$(PYTHON) -m venv $(VENV)

py-deps: $(PY)
	@$(PY) -c "import numpy, rich, pytest, scikit_build_core, nanobind, matplotlib, distributed" 2>/dev/null || \
	  $(PY) -m pip install -q --disable-pip-version-check $(PY_PKGS)

install: apt-deps py-deps
	$(PY) -m pip install -q --disable-pip-version-check --no-build-isolation .

clean:
	rm -rf build
