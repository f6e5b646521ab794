"""The floor plan holds (docs/architecture.md): few modules at the top of broker/ and console/, one package per
area, no module past 800 lines, no area importing another area's private names. The layer contract and the
absence of import cycles are checked by `make lint` (lint-imports, [tool.importlinter] in pyproject.toml)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CODE = ("broker", "console", "analytics")
# Django's own conventions, not areas: they stay where Django looks for them.
DJANGO_FOLDERS = {"migrations", "management", "templatetags"}


def top_modules(package: str) -> list[str]:
    return sorted(p.stem for p in (ROOT / package).glob("*.py") if p.name != "__init__.py")


def python_files() -> list[Path]:
    return [p for package in CODE for p in (ROOT / package).rglob("*.py") if "migrations" not in p.parts]


def area_of(module: str) -> str:
    """The area a dotted module belongs to: its first two parts (broker.topics, console.views)."""
    return ".".join(module.split(".")[:2])


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def test_broker_keeps_at_most_eight_modules_at_its_top() -> None:
    assert len(top_modules("broker")) <= 8, top_modules("broker")


def test_console_keeps_at_most_twelve_modules_at_its_top() -> None:
    assert len(top_modules("console")) <= 12, top_modules("console")


def test_every_folder_is_a_package_with_a_docstring_saying_what_it_holds() -> None:
    missing = []
    for package in CODE:
        for folder in [ROOT / package, *(ROOT / package).rglob("*")]:
            if not folder.is_dir() or DJANGO_FOLDERS & set(folder.relative_to(ROOT).parts):
                continue
            if folder.name == "__pycache__" or not any(folder.glob("*.py")):
                continue
            init = folder / "__init__.py"
            if not init.exists() or not ast.get_docstring(ast.parse(init.read_text())):
                missing.append(str(folder.relative_to(ROOT)))
    assert missing == []


@pytest.mark.parametrize("path", python_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_is_over_800_lines(path: Path) -> None:
    assert len(path.read_text().splitlines()) <= 800


def test_no_area_imports_another_areas_private_names() -> None:
    """``from broker.client.connection import _helper`` in broker/zk/ reaches into another area's insides;
    siblings of one area may share private helpers."""
    reaching = []
    for path in python_files():
        importer = module_name(path)
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or not node.module or node.level:
                continue
            if node.module.split(".")[0] not in CODE or area_of(node.module) == area_of(importer):
                continue
            private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
            if private:
                reaching.append(f"{importer} imports {', '.join(private)} from {node.module}")
    assert reaching == []
