# Ember: the two quick-start commands are `make demo` and `make test`; both install what they need.
#
#   make demo        build and run the first example (examples/01_first_program.py)
#   make test        C++ tests (ctest) and Python tests (pytest), small rings
#   make test-slow   the large-parameter tests (N = 2^16)
#   make bench       `ember bench all` at N = 2^16
#   make peers       side-by-side timings against OpenFHE and DESILO (bench/peers/)
#   make test-asan   C++ and Python suites (small rings) under AddressSanitizer + UndefinedBehaviorSanitizer
#   make test-tsan   the threading tests (C++ stress test, Python threads sharing a Context) under ThreadSanitizer
#   make fuzz        every libFuzzer target (fuzz/) for FUZZ_SECONDS seconds each; fails on any crash

PYTHON  ?= python3
VENV    := build/venv
PY      := $(VENV)/bin/python
JOBS    ?= $(shell nproc)
APT_PKGS := cmake g++ make libssl-dev libgmp-dev libgtest-dev python3-venv python3-dev
PY_PKGS  := numpy rich pytest scikit-build-core nanobind matplotlib "dask[distributed]" scikit-learn
# clang and its runtimes (libFuzzer, sanitizers): only `make fuzz` needs them.
FUZZ_APT_PKGS := clang libclang-rt-dev
FUZZ_SECONDS ?= 60

.PHONY: demo test test-slow test-cpp test-python bench peers deps apt-deps fuzz-deps py-deps install clean \
        test-asan test-tsan fuzz

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

# Debian packages, installed only when one is missing (needs root or sudo). A name without an architecture means the
# native one (or `all`): once a foreign architecture's instance is installed too (`make test-arm64` adds arm64
# libraries), a bare `dpkg -s libssl-dev` is ambiguous and fails.
define apt_install
	@missing=""; arch=$$(dpkg --print-architecture); for p in $(1); do \
	  case $$p in *:*) q=$$p;; *) q=$$p:$$arch;; esac; \
	  dpkg -s $$q >/dev/null 2>&1 || dpkg -s $${p%%:*}:all >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi
endef

apt-deps:
	$(call apt_install,$(APT_PKGS))

fuzz-deps:
	$(call apt_install,$(APT_PKGS) $(FUZZ_APT_PKGS))

$(PY):
	$(PYTHON) -m venv $(VENV)

py-deps: $(PY)
	@$(PY) -c "import numpy, rich, pytest, scikit_build_core, nanobind, matplotlib, distributed, sklearn" 2>/dev/null || \
	  $(PY) -m pip install -q --disable-pip-version-check $(PY_PKGS)

install: apt-deps py-deps
	$(PY) -m pip install -q --disable-pip-version-check --no-build-isolation .

# --- sanitizers and fuzzing (SECURITY section of the README) --------------------------------------
# Each builds the core, the C++ tests and the Python extension with gcc's sanitizers in its own build
# directory; the Python suite imports that extension from a staged copy of the package (build/<san>/pkg),
# the sanitizer runtime preloaded into the venv's (uninstrumented) interpreter.
SAN_CMAKE = cmake -S . -B build/$(1) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_SANITIZE=$(2) -DEMBER_TESTS=ON \
            -DEMBER_PYTHON=ON -DPython_EXECUTABLE=$(abspath $(PY)) > /dev/null
SAN_STAGE = rm -rf build/$(1)/pkg && mkdir -p build/$(1)/pkg && cp -r python/ember build/$(1)/pkg/ && cp build/$(1)/_ember*.so build/$(1)/pkg/ember/
# The ASan runtime must come first in the process, and an uninstrumented python3 has no libstdc++: preloading
# libasan alone leaves its __cxa_throw interceptor without the real function (resolved once, at start-up,
# before the extension loads libstdc++), so the first C++ exception thrown aborts with "CHECK failed:
# real___cxa_throw != 0" (google/sanitizers#934). Preloading libstdc++ right after libasan fixes that.
ASAN_PRELOAD = $$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libstdc++.so)
ASAN_ENV = ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# gcc 12's TSan assumes the address-space layout of vm.mmap_rnd_bits <= 28; kernels that randomise more
# (32 bits: seen on a CI machine) make every TSan process die at start ("unexpected memory mapping" or a bare
# segfault) before a test runs. .ci/no-aslr runs the command with ASLR off for that one process (setarch -R),
# which TSan's layout always accepts; it says so and fails if the personality call is refused.
TSAN_ENV = TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(abspath .ci/tsan.supp)" .ci/no-aslr

test-asan: apt-deps py-deps
	$(call SAN_CMAKE,asan,address)
	cmake --build build/asan -j$(JOBS) --target ember_tests _ember
	cd build/asan && $(ASAN_ENV) ctest --output-on-failure -j$(JOBS)
	$(call SAN_STAGE,asan)
	@# the extension must really be instrumented (a dropped flag would make this run vacuously clean)
	nm -D --undefined-only build/asan/pkg/ember/_ember*.so | grep -q __asan_report_load8
	nm -D --undefined-only build/asan/pkg/ember/_ember*.so | grep -q __ubsan_handle_
	$(ASAN_ENV) LD_PRELOAD="$(ASAN_PRELOAD)" PYTHONPATH=build/asan/pkg $(PY) -m pytest -q -p no:cacheprovider tests/python

test-tsan: apt-deps py-deps
	$(call SAN_CMAKE,tsan,thread)
	cmake --build build/tsan -j$(JOBS) --target ember_thread_tests _ember
	$(TSAN_ENV) EMBER_STRESS_ROUNDS=4 build/tsan/tests/cpp/ember_thread_tests
	$(call SAN_STAGE,tsan)
	$(TSAN_ENV) LD_PRELOAD=$$(gcc -print-file-name=libtsan.so) PYTHONPATH=build/tsan/pkg $(PY) -m pytest -q -p no:cacheprovider tests/python/test_threads.py

fuzz: fuzz-deps
	CC=clang CXX=clang++ cmake -S . -B build/fuzz -DCMAKE_BUILD_TYPE=Release -DEMBER_FUZZ=ON -DEMBER_TESTS=OFF > /dev/null
	cmake --build build/fuzz -j$(JOBS)
	FUZZ_SECONDS=$(FUZZ_SECONDS) fuzz/run.sh

clean:
	rm -rf build
