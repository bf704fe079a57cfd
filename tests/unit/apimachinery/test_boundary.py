"""apimachinery sits below everything: importing it loads no other fleetplane package."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import fleetplane.apimachinery


def test_apimachinery_imports_nothing_else_of_fleetplane():
    modules = [m.name for m in pkgutil.iter_modules(fleetplane.apimachinery.__path__)]
    assert {"labels", "fields", "quantity", "metatime", "validation", "jsonpath", "gofmt", "jsonvalue"} <= set(modules)
    code = (
        "import sys\n"
        + "".join(f"import fleetplane.apimachinery.{m}\n" for m in modules)
        + "print(' '.join(m for m in sys.modules if m.startswith('fleetplane.')"
        " and not m.startswith('fleetplane.apimachinery')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == []
