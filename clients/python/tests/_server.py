"""A ragmem server for the tests: the one $RAGMEM_URL and $RAGMEM_TOKEN name,
or one started here from $RAGMEM_BIN or a binary built from this checkout."""

from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.request
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
PYTHON_DIR = os.path.dirname(HERE)

_LISTEN = re.compile(r"ragmem: serving .* on (https?://\S+)")

_lock = threading.RLock()
_binary: Optional[str] = None
_shared: Optional["Served"] = None


def in_ci() -> bool:
    return os.environ.get("CI", "") not in ("", "0", "false")


def binary() -> str:
    """The ragmem binary: $RAGMEM_BIN, else built with `go build` once per
    test run. Skips the test when neither is possible (fails in CI)."""
    global _binary
    with _lock:
        if _binary:
            return _binary
        env_bin = os.environ.get("RAGMEM_BIN")
        if env_bin:
            _binary = env_bin
            return _binary
        go = shutil.which("go")
        if go is None or not os.path.exists(os.path.join(REPO, "go.mod")):
            msg = "no ragmem binary: set RAGMEM_BIN, or install Go to build one"
            if in_ci():
                raise AssertionError(msg)
            raise unittest.SkipTest(msg)
        out = tempfile.mkdtemp(prefix="ragmem-pytest-bin-")
        atexit.register(shutil.rmtree, out, True)
        path = os.path.join(out, "ragmem")
        subprocess.run([go, "build", "-o", path, "./cmd/ragmem"], cwd=REPO, check=True)
        _binary = path
        return path


class Served:
    """A `ragmem serve` process on a temporary data directory."""

    def __init__(self, *args: str) -> None:
        self.dir = tempfile.mkdtemp(prefix="ragmem-pytest-")
        self.bin = binary()
        self.env = dict(os.environ)
        self.env.update({"RAGMEM_EMBEDDER": "lexical", "XDG_CONFIG_HOME": os.path.join(self.dir, "config"),
                         "RAGMEM_CONFIG": "", "RAGMEM_DIR": ""})
        self.stderr = open(os.path.join(self.dir, "serve.log"), "wb")
        self.proc = subprocess.Popen([self.bin, "--dir", os.path.join(self.dir, "data"), "serve", "--addr", "127.0.0.1:0", *args],
                                     stdout=subprocess.PIPE, stderr=self.stderr, env=self.env)
        self.url = ""
        self.token = ""
        self._lines: List[str] = []
        ready = threading.Event()

        def read() -> None:
            assert self.proc.stdout is not None
            for raw in self.proc.stdout:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                self._lines.append(line)
                m = _LISTEN.search(line)
                if m and not self.url:
                    self.url = m.group(1)
                    ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(60) or not self.url:
            self.stop()
            raise AssertionError("ragmem serve did not start:\n" + "\n".join(self._lines) + "\n" + self.log())
        self.token = self.ragmem("token", "show").strip()
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(self.url + "/readyz", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        atexit.register(self.stop)

    def ragmem(self, *args: str) -> str:
        """Runs another ragmem command on the server's data directory."""
        out = subprocess.run([self.bin, "--dir", os.path.join(self.dir, "data"), *args], env=self.env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True, timeout=120)
        return out.stdout.decode("utf-8")

    def log(self) -> str:
        try:
            with open(os.path.join(self.dir, "serve.log"), encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stderr.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def own(*args: str) -> Served:
    """A server started for the caller alone (stopped at exit, or with stop())."""
    return Served(*args)


def shared() -> Dict[str, str]:
    """{"url", "token"} of the server the tests share: $RAGMEM_URL and
    $RAGMEM_TOKEN when set, else one started once per test run."""
    global _shared
    url, token = os.environ.get("RAGMEM_URL"), os.environ.get("RAGMEM_TOKEN")
    if url and token:
        return {"url": url, "token": token}
    with _lock:
        if _shared is None:
            _shared = Served()
        return {"url": _shared.url, "token": _shared.token}


def first_code_block(path: str, lang: str) -> str:
    """The first fenced code block of a Markdown file, which must be in lang."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^```(\w*)\n(.*?)^```", text, re.S | re.M)
    if not m:
        raise AssertionError(f"{path}: no code block")
    if m.group(1) != lang:
        raise AssertionError(f"{path}: the first code block is {m.group(1)!r}, not {lang}")
    return m.group(2)
