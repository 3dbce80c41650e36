"""Shared fixtures: the crawleval binary built beside the package (for CLI parity) and a scratch
directory."""

import json
import os
import subprocess
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def cli():
    """Runs the crawleval command; returns (exit code, stdout, stderr)."""
    binary = os.environ.get("CRAWLEVAL_BIN")
    if not binary or not Path(binary).exists():
        pytest.skip("CRAWLEVAL_BIN does not name the crawleval binary (ctest sets it)")

    def run(*args):
        p = subprocess.run([binary, *map(str, args)], capture_output=True, text=True)
        return p.returncode, p.stdout, p.stderr

    return run


@pytest.fixture(scope="session")
def cli_json(cli, tmp_path_factory):
    """Runs a crawleval command with --json and returns the parsed JSON."""
    folder = tmp_path_factory.mktemp("cli")
    count = [0]

    def run(*args):
        count[0] += 1
        out = folder / f"out{count[0]}.json"
        rc, stdout, stderr = cli(*args, "--json", out)
        assert rc == 0, stderr
        return json.loads(out.read_text())

    return run
