"""The README's first code block runs against a real server."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import unittest

from tests import _server


def run_readme_example(python: str, extra_env: "dict[str, str]") -> str:
    """Runs the README's first code block with python, against the shared
    server, from an empty folder; returns its output."""
    code = _server.first_code_block(os.path.join(_server.PYTHON_DIR, "README.md"), "python")
    s = _server.shared()
    env = dict(os.environ)
    env.update({"RAGMEM_URL": s["url"], "RAGMEM_TOKEN": s["token"]})
    env.update(extra_env)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "example.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(code)
        out = subprocess.run([python, path], cwd=d, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if out.returncode != 0:
        raise AssertionError(f"the README example failed ({out.returncode}):\n{out.stdout.decode()}\n{out.stderr.decode()}")
    return out.stdout.decode("utf-8")


class ReadmeTest(unittest.TestCase):
    def test_first_code_block_runs(self) -> None:
        out = run_readme_example(sys.executable, {"PYTHONPATH": _server.PYTHON_DIR})
        self.assertIn("notes://gateway ['Gateway']", out)
        self.assertIn("tokens of context", out)


if __name__ == "__main__":
    unittest.main()
