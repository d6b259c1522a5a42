"""One version (issue 27): the VERSION file at the top of the tree is the only place the version is written;
ember.__version__, the installed distribution's metadata, `ember --version`, `ember info` and the CMake package
(EmberConfigVersion.cmake, <ember/version.hpp>) all report it."""
import json
import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import version as dist_version
from pathlib import Path

import pytest

import ember

ROOT = Path(__file__).resolve().parents[2]
VERSION = (ROOT / "VERSION").read_text().strip()


def test_version_file_is_one_semantic_version():
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION), VERSION


def test_python_version_is_the_version_file():
    assert ember.__version__ == VERSION
    assert dist_version("ember-fhe") == VERSION  # pyproject.toml: dynamic version, read from VERSION


def test_cli_version_and_info():
    out = subprocess.run([sys.executable, "-m", "ember", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"ember {VERSION}"
    out = subprocess.run([sys.executable, "-m", "ember", "info"], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["version"] == VERSION


def test_version_is_written_nowhere_else():
    # CMake's project() and pyproject.toml read the file instead of repeating the number.
    cmake = (ROOT / "CMakeLists.txt").read_text()
    assert re.search(r'file\(STRINGS "\$\{CMAKE_CURRENT_SOURCE_DIR\}/VERSION" EMBER_VERSION', cmake)
    assert re.search(r"project\(ember VERSION \$\{EMBER_VERSION\}", cmake)
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^dynamic = \["version"\]', pyproject, re.M)
    assert not re.search(r"^version\s*=", pyproject, re.M)


@pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")
def test_cmake_package_version(tmp_path):
    # Configure only (no compilation): the CMake package version file and the generated header carry VERSION.
    # Without a sanitizer runtime preloaded into cmake and the compilers it probes (make test-asan preloads one).
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    subprocess.run(["cmake", "-S", str(ROOT), "-B", str(tmp_path), "-DEMBER_TESTS=OFF"], capture_output=True,
                   check=True, env=env)
    cfg = (tmp_path / "EmberConfigVersion.cmake").read_text()
    assert f'set(PACKAGE_VERSION "{VERSION}")' in cfg
    hdr = (tmp_path / "include" / "ember" / "version.hpp").read_text()
    assert f'#define EMBER_VERSION "{VERSION}"' in hdr
    pc = (tmp_path / "ember.pc").read_text()
    assert f"Version: {VERSION}" in pc
