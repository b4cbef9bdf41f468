"""The build backend of the ragmem client (PEP 517 and PEP 660), in the
standard library only, so that ``pip install ./clients/python`` works without
a package index.

It builds a pure-Python wheel of the ``ragmem`` package, an sdist of the
project and an editable wheel, with the metadata of pyproject.toml's
``[project]`` table. Archives are reproducible (fixed timestamps, sorted
entries).
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import io
import json
import os
import tarfile
import zipfile
from typing import Any, Dict, List, Mapping, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "ragmem"
_EPOCH = (1980, 1, 1, 0, 0, 0)


def read_pyproject(path: Optional[str] = None) -> Dict[str, Any]:
    """pyproject.toml as a dict: with tomllib where Python has it (3.11+),
    else with parse_simple_toml, which reads the subset the file uses."""
    path = path or os.path.join(ROOT, "pyproject.toml")
    with open(path, "rb") as f:
        data = f.read()
    try:
        tomllib = importlib.import_module("tomllib")
    except ImportError:
        return parse_simple_toml(data.decode("utf-8"))
    return dict(tomllib.loads(data.decode("utf-8")))


def parse_simple_toml(text: str) -> Dict[str, Any]:
    """Reads the TOML subset of pyproject.toml: comments, [table] headers, and
    one-line ``key = value`` pairs whose value is a basic string, an array of
    them, or true/false (written the same in JSON)."""
    out: Dict[str, Any] = {}
    table = out
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            table = out
            for part in line[1:-1].strip().split("."):
                table = table.setdefault(part.strip(), {})
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"pyproject.toml:{n}: not a key = value line")
        try:
            table[key.strip()] = json.loads(value.strip())
        except ValueError as e:
            raise ValueError(f"pyproject.toml:{n}: value outside the subset this backend reads: {value.strip()}") from e
    return out


def _project() -> Dict[str, Any]:
    p = read_pyproject().get("project")
    if not isinstance(p, dict) or not p.get("name") or not p.get("version"):
        raise ValueError("pyproject.toml: [project] needs a name and a version")
    return p


def metadata(project: Mapping[str, Any]) -> str:
    """The core metadata (PKG-INFO / METADATA, version 2.1) of the project."""
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}"]
    if project.get("description"):
        lines.append(f"Summary: {project['description']}")
    if project.get("keywords"):
        lines.append("Keywords: " + ",".join(project["keywords"]))
    for c in project.get("classifiers", []):
        lines.append(f"Classifier: {c}")
    if project.get("requires-python"):
        lines.append(f"Requires-Python: {project['requires-python']}")
    for d in project.get("dependencies", []):
        lines.append(f"Requires-Dist: {d}")
    body = ""
    readme = project.get("readme")
    if readme:
        with open(os.path.join(ROOT, readme), encoding="utf-8") as f:
            body = f.read()
        lines.append("Description-Content-Type: text/markdown")
    return "\n".join(lines) + "\n\n" + body


def _dist_name(project: Mapping[str, Any]) -> str:
    return f"{str(project['name']).replace('-', '_')}-{project['version']}"


def _package_files() -> List[Tuple[str, str]]:
    """(path in the archive, path on disk) of the package's files, sorted."""
    out = []
    pkg = os.path.join(ROOT, PACKAGE)
    for dirpath, dirnames, filenames in os.walk(pkg):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith((".pyc", ".pyo")):
                continue
            full = os.path.join(dirpath, name)
            out.append((os.path.relpath(full, ROOT).replace(os.sep, "/"), full))
    return out


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return f"{name},sha256={digest},{len(data)}"


def _write_wheel(directory: str, files: List[Tuple[str, bytes]], project: Mapping[str, Any]) -> str:
    dist = _dist_name(project)
    info = f"{dist}.dist-info"
    files = list(files) + [
        (f"{info}/METADATA", metadata(project).encode("utf-8")),
        (f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: ragmem_backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
        (f"{info}/top_level.txt", f"{PACKAGE}\n".encode("utf-8")),
    ]
    record = "\n".join(_record_line(n, d) for n, d in files) + f"\n{info}/RECORD,,\n"
    files.append((f"{info}/RECORD", record.encode("utf-8")))
    name = f"{dist}-py3-none-any.whl"
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, name + ".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for n, d in files:
            zi = zipfile.ZipInfo(n, date_time=_EPOCH)
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, d)
    os.replace(tmp, os.path.join(directory, name))
    return name


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


# --- PEP 517 ----------------------------------------------------------------


def get_requires_for_build_wheel(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def build_wheel(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None,
                metadata_directory: Optional[str] = None) -> str:
    """Builds the wheel into wheel_directory and returns its file name."""
    return _write_wheel(wheel_directory, [(n, _read(p)) for n, p in _package_files()], _project())


def build_editable(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None,
                   metadata_directory: Optional[str] = None) -> str:
    """Builds an editable wheel: a .pth file that puts this folder on sys.path."""
    pth = (ROOT + "\n").encode("utf-8")
    return _write_wheel(wheel_directory, [(f"__editable__.{PACKAGE}.pth", pth)], _project())


def build_sdist(sdist_directory: str, config_settings: Optional[Dict[str, Any]] = None) -> str:
    """Builds the source distribution into sdist_directory and returns its file name."""
    project = _project()
    dist = _dist_name(project)
    members = [("pyproject.toml", os.path.join(ROOT, "pyproject.toml")),
               ("_backend/ragmem_backend.py", os.path.abspath(__file__))]
    if project.get("readme"):
        members.append((project["readme"], os.path.join(ROOT, project["readme"])))
    members += _package_files()
    name = f"{dist}.tar.gz"
    os.makedirs(sdist_directory, exist_ok=True)
    tmp = os.path.join(sdist_directory, name + ".tmp")
    with tarfile.open(tmp, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        def add(arcname: str, data: bytes) -> None:
            ti = tarfile.TarInfo(f"{dist}/{arcname}")
            ti.size, ti.mtime, ti.mode = len(data), 315532800, 0o644
            tar.addfile(ti, io.BytesIO(data))
        add("PKG-INFO", metadata(project).encode("utf-8"))
        for arcname, path in members:
            add(arcname, _read(path))
    os.replace(tmp, os.path.join(sdist_directory, name))
    return name
