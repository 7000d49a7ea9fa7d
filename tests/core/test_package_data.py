"""Data files are read beside ``mcpsniff.core``, from a directory or a zip archive."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from mcpsniff.core import package_data
from mcpsniff.core.package_data import read_text

CORE = Path(package_data.__file__).parent


def test_a_data_file_reads_as_its_text() -> None:
    for name in ("catalog.json", "spec_pages.json", "conformance.json"):
        assert read_text(name) == (CORE / name).read_text(encoding="utf-8")


def test_a_missing_data_file_raises_os_error() -> None:
    try:
        read_text("no-such-file.json")
    except OSError:
        return
    raise AssertionError("a missing file must raise")


def test_the_package_may_live_in_a_zip_archive(tmp_path: Path) -> None:
    archive = tmp_path / "mcpsniff.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("mcpsniff/__init__.py", "")
        z.writestr("mcpsniff/core/__init__.py", "")
        z.write(CORE / "package_data.py", "mcpsniff/core/package_data.py")
        z.writestr("mcpsniff/core/data.json", '{"é": 1}\n')
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(archive)!r})\n"
        "from mcpsniff.core import package_data\n"
        "assert '.zip' in package_data.__file__, package_data.__file__\n"
        "print(package_data.read_text('data.json'), end='')\n"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, timeout=60, check=True
    )
    assert done.stdout.decode("utf-8") == '{"é": 1}\n'
