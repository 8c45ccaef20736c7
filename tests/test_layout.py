"""The layout of the package (CHANGELOG 0.2.0, docs/layout.md): subpackages that
import one way only, every module under 600 lines, and each subpackage's list of
lazily loaded modules matching its files. Read from the sources; nothing runs."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "swcuts"

#: From the front ends down: a module may import from its own package and from
#: the packages after it, never from one before it. Packages on one line of the
#: README's list share a rank and may not import each other.
ORDER = [["cli"], ["evaluation"], ["clustering", "motion"], ["segmentation"], ["inference"],
         ["samplers"], ["models"], ["graph", "image"], ["io"], ["_numba"]]
RANK = {name: rank for rank, names in enumerate(ORDER) for name in names}
MAX_LINES = 600


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = rel.parts[:-1] if rel.parts[-1] == "__init__" else rel.parts
        yield path, ".".join(parts)


def _imports(path, module):
    """(imported module, line) of every import in ``path``, annotation-only ones left out."""
    tree = ast.parse(path.read_text())
    typing_only = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only.update(id(n) for n in ast.walk(node))
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            yield from ((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: len(module.split(".")) - node.level + path.name.startswith("__init__")]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            if target == "swcuts":
                yield from ((f"swcuts.{alias.name}", node.lineno) for alias in node.names)
            else:
                yield target, node.lineno


def _package(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "swcuts" else None


def test_every_top_level_entry_has_a_rank():
    entries = {p.stem if p.suffix == ".py" else p.name for p in PACKAGE.iterdir()
               if p.name != "__pycache__" and not p.name.startswith("__init__") and p.name != "__main__.py"}
    assert entries == set(RANK), "a new top-level module or package needs a place in ORDER (and docs/layout.md)"


def test_packages_import_one_way():
    wrong = []
    for path, module in _modules():
        src = _package(module)
        if src not in RANK:
            continue
        for target, line in _imports(path, module):
            dst = _package(target or "")
            if dst in RANK and dst != src and RANK[dst] <= RANK[src]:
                wrong.append(f"{module}:{line} imports {target}")
    assert not wrong, "imports against the layer order:\n" + "\n".join(wrong)


@pytest.mark.parametrize("path", [p for p, _ in _modules()], ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_stay_small(path):
    assert len(path.read_text().splitlines()) <= MAX_LINES


def test_lazy_submodule_lists_match_the_files():
    for init in PACKAGE.rglob("__init__.py"):
        text = init.read_text()
        if "_lazy.attach(" not in text:
            continue
        listed = set(ast.literal_eval(text.split("submodules=", 1)[1].split("]", 1)[0] + "]"))
        folder = init.parent
        present = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
        present |= {d.name for d in folder.iterdir() if (d / "__init__.py").is_file()}
        assert listed == present, f"{init.relative_to(PACKAGE)}: lazy list {sorted(listed)} != files {sorted(present)}"


def test_the_public_api_stub_names_real_objects():
    import swcuts

    for name in swcuts.__all__:
        assert getattr(swcuts, name) is not None
