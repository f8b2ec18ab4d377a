"""Shared fixtures of the package's tests.  tests/python/run.sh runs them
against an installed liblanemap: LANEMAP_CLI is that install's lanemap,
LANEMAP_SOURCE_DIR the source tree (its kernels), LANEMAP_CACHE_DIR an
empty profile cache of the run's own."""
import json
import os
import subprocess

import pytest


def _env(name):
    value = os.environ.get(name)
    if not value:
        pytest.exit("%s is not set: run the tests through "
                    "tests/python/run.sh" % name, returncode=2)
    return value


@pytest.fixture(scope="session")
def source_dir():
    return _env("LANEMAP_SOURCE_DIR")


@pytest.fixture(scope="session")
def kernel_path(source_dir):
    def path(name):
        for sub in ("kernels", os.path.join("heldout", "kernels")):
            p = os.path.join(source_dir, sub, name + ".lk")
            if os.path.exists(p):
                return p
        raise FileNotFoundError(name)
    return path


class Cli:
    """The installed lanemap command."""

    def __init__(self, exe):
        self.exe = exe

    def run(self, *args, check=True):
        r = subprocess.run([self.exe, *map(str, args)], capture_output=True,
                           text=True)
        if check and r.returncode != 0:
            raise AssertionError("lanemap %s: exit %d\n%s" % (
                " ".join(map(str, args)), r.returncode, r.stderr))
        return r

    def jsonl(self, *args):
        return [json.loads(line) for line in self.run(*args).stdout
                .splitlines() if line.strip()]


@pytest.fixture(scope="session")
def cli():
    return Cli(_env("LANEMAP_CLI"))
