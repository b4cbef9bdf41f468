"""The package installs with pip from this folder without a package index,
works where Python 3.9 does, and carries its type information."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tempfile
import unittest
import zipfile

from tests import _server
from tests.test_readme import run_readme_example

sys.path.insert(0, os.path.join(_server.PYTHON_DIR, "_backend"))
import ragmem_backend  # noqa: E402


class PackagingTest(unittest.TestCase):
    def test_wheel(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            name = ragmem_backend.build_wheel(d)
            self.assertEqual(name, "ragmem-0.1.0-py3-none-any.whl")
            with zipfile.ZipFile(os.path.join(d, name)) as z:
                names = set(z.namelist())
                for want in ("ragmem/__init__.py", "ragmem/_client.py", "ragmem/_errors.py", "ragmem/types.py",
                             "ragmem/py.typed", "ragmem-0.1.0.dist-info/METADATA", "ragmem-0.1.0.dist-info/RECORD"):
                    self.assertIn(want, names)
                self.assertFalse([n for n in names if n.startswith("tests/") or "__pycache__" in n], names)
                meta = z.read("ragmem-0.1.0.dist-info/METADATA").decode()
                self.assertIn("Requires-Python: >=3.9", meta)
                self.assertIn("Classifier: Typing :: Typed", meta)
                record = z.read("ragmem-0.1.0.dist-info/RECORD").decode().splitlines()
                self.assertEqual(len(record), len(names))
            again = tempfile.mkdtemp(dir=d)
            ragmem_backend.build_wheel(again)
            with open(os.path.join(d, name), "rb") as a, open(os.path.join(again, name), "rb") as b:
                self.assertEqual(a.read(), b.read(), "the wheel is not reproducible")
            sdist = ragmem_backend.build_sdist(d)
            self.assertEqual(sdist, "ragmem-0.1.0.tar.gz")

    def test_simple_toml_reads_pyproject_as_tomllib_does(self) -> None:
        path = os.path.join(_server.PYTHON_DIR, "pyproject.toml")
        with open(path, encoding="utf-8") as f:
            simple = ragmem_backend.parse_simple_toml(f.read())
        try:
            import tomllib  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            self.skipTest("tomllib is Python 3.11+")
        with open(path, "rb") as f:
            self.assertEqual(simple, tomllib.load(f))
        with self.assertRaises(ValueError):
            ragmem_backend.parse_simple_toml("[project]\nname = 'single quotes'\n")

    def test_types(self) -> None:
        """mypy --strict, for Python 3.9, finds nothing in the package and its backend."""
        try:
            import mypy  # noqa: F401
        except ImportError:
            msg = "mypy is not installed (on Debian: apt-get install mypy)"
            if _server.in_ci():
                self.fail(msg)
            self.skipTest(msg)
        out = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--python-version", "3.9", "--no-incremental", "--cache-dir", os.devnull, "ragmem", "_backend"],
                             cwd=_server.PYTHON_DIR, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
        self.assertEqual(out.returncode, 0, out.stdout.decode())

    def test_python39_syntax(self) -> None:
        pkg = os.path.join(_server.PYTHON_DIR, "ragmem")
        for name in sorted(os.listdir(pkg)):
            if not name.endswith(".py"):
                continue
            with open(os.path.join(pkg, name), encoding="utf-8") as f:
                src = f.read()
            tree = ast.parse(src, name, feature_version=(3, 9))
            # Annotations are not evaluated at run time (X | None is 3.10+).
            futures = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
            if name != "__init__.py":
                self.assertTrue(futures, f"{name} lacks `from __future__ import annotations`")

    def test_pip_install_without_an_index(self) -> None:
        """pip install ./clients/python in a fresh virtual environment, with
        no package index reachable; then the README example runs with it."""
        with tempfile.TemporaryDirectory() as d:
            venv = os.path.join(d, "venv")
            made = subprocess.run([sys.executable, "-m", "venv", venv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            if made.returncode != 0:
                msg = "python3 -m venv failed (on Debian: apt-get install python3-venv):\n" + made.stdout.decode()
                if _server.in_ci():
                    self.fail(msg)
                self.skipTest(msg)
            py = os.path.join(venv, "bin", "python")
            env = dict(os.environ)
            env.update({"PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONPATH": ""})
            for args in (["install", _server.PYTHON_DIR], ["install", "--force-reinstall", "-e", _server.PYTHON_DIR]):
                out = subprocess.run([py, "-m", "pip", *args], cwd=d, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
                self.assertEqual(out.returncode, 0, out.stdout.decode())
                check = subprocess.run([py, "-c", "import ragmem, os; print(ragmem.__version__, os.path.isfile(os.path.join(os.path.dirname(ragmem.__file__), 'py.typed')))"],
                                       cwd=d, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                self.assertEqual(check.stdout.decode().split(), ["0.1.0", "True"], check.stdout.decode())
            out = subprocess.run([py, "-m", "pip", "install", "--force-reinstall", _server.PYTHON_DIR], cwd=d, env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
            self.assertEqual(out.returncode, 0, out.stdout.decode())
            self.assertIn("notes://gateway", run_readme_example(py, {"PYTHONPATH": ""}))


if __name__ == "__main__":
    unittest.main()
