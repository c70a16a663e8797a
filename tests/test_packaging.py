"""The wheel carries what an installed ``placement`` needs: the shipped instances, the catalogues,
the licence.

The wheel is built offline from a copy of the sources (``pip wheel --no-build-isolation``, with
the setuptools of the test environment), so the build leaves nothing in the working tree.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("placement", "topology", "costmodels", "solvers")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    src = tmp_path_factory.mktemp("src")
    for name in (*PACKAGES, "pyproject.toml", "README.md", "LICENSE"):
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy(path, src / name)
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation",
                           "--no-index", "-q", "-w", str(out)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    (path,) = out.glob("placement-*.whl")
    return zipfile.ZipFile(path)


def test_the_wheel_ships_every_instance(wheel):
    shipped = {p.name for p in (ROOT / "placement" / "instances").glob("*.yaml")}
    inside = {Path(n).name for n in wheel.namelist() if n.startswith("placement/instances/") and n.endswith(".yaml")}
    assert len(shipped) >= 7 and inside == shipped
    for name in shipped:
        assert wheel.read(f"placement/instances/{name}") == (ROOT / "placement" / "instances" / name).read_bytes()


def test_the_wheel_ships_the_catalogues_and_the_licence(wheel):
    names = wheel.namelist()
    assert any(n.startswith("topology/catalog/") and n.endswith(".yaml") for n in names)
    assert any(n.startswith("costmodels/catalog/") and n.endswith(".yaml") for n in names)
    (meta,) = [n for n in names if n.endswith(".dist-info/METADATA")]
    assert "Apache" in wheel.read(meta).decode()
    licences = [n for n in names if ".dist-info/" in n and "LICENSE" in n]
    assert licences and b"Apache License" in wheel.read(licences[0])


def test_the_root_instances_folder_is_the_packaged_one():
    assert (ROOT / "instances").resolve() == (ROOT / "placement" / "instances").resolve()

