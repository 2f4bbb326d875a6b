"""Dependencies point one way: cli/web/demo -> ops -> domain -> kafka/spark -> foundations.

A module may import from its own layer or any layer below it, never above (imports used only
for type checking are exempt). reset/ in particular imports neither snapshots/ nor restore/:
the executor gets its snapshot function injected. See src/offsetkeeper/ops/__init__.py.
"""

from __future__ import annotations

import ast
from pathlib import Path

import offsetkeeper

ROOT = Path(offsetkeeper.__file__).parent

LAYERS = {
    0: {"errors", "models", "redact", "storage", "progress", "config", "arrowbuf", "times", "netaddr"},
    1: {"kafka", "spark", "devbroker"},
    # spark/kafka is the offsetkeeper-kafka data source, a product feature on top of spark/
    # (its streaming source commits to groups through the reset executor).
    2: {"reset", "snapshots", "backup", "restore", "inspect", "history", "consumer", "streaming",
        "offsetlog", "zk", "spark.kafka", "groups"},
    3: {"ops"},
    4: {"cli", "web", "demo"},
}
FORBIDDEN = {"reset": {"snapshots", "restore", "ops"}}


def _top(module: str) -> str:
    parts = module.split(".")
    if parts[1:3] == ["spark", "kafka"]:
        return "spark.kafka"
    return parts[1] if len(parts) > 1 else ""


def _layer(path: Path) -> tuple[int, str] | None:
    rel = path.relative_to(ROOT)
    top = rel.parts[0].removesuffix(".py")
    if rel.parts[:2] == ("spark", "kafka"):
        top = "spark.kafka"
    if rel.name == "demo.py" or rel.parts[-1].startswith("demo_"):
        return 4, top  # a package's demo part renders for the demo command
    for n, names in LAYERS.items():
        if top in names:
            return n, top
    return None


def _runtime_imports(tree: ast.AST):
    type_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in ast.walk(node):
                type_only.add(id(sub))
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module


def _layer_of_module(top: str) -> int | None:
    for n, names in LAYERS.items():
        if top in names:
            return n
    return None


def test_every_module_is_in_a_layer():
    unplaced = sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py")
                      if not (p.parent == ROOT and p.name == "__init__.py") and _layer(p) is None)
    assert unplaced == [], f"add these to LAYERS in {__file__}: {unplaced}"


def test_imports_point_down_the_layers():
    violations = []
    for path in sorted(ROOT.rglob("*.py")):
        if path.parent == ROOT and path.name == "__init__.py":
            continue
        placed = _layer(path)
        if placed is None:
            continue
        layer, top = placed
        for lineno, module in _runtime_imports(ast.parse(path.read_text())):
            if not module.startswith("offsetkeeper."):
                continue
            target_top = _top(module)
            if target_top == top:
                continue
            target = _layer_of_module(target_top)
            where = f"{path.relative_to(ROOT)}:{lineno} imports {module}"
            if target is not None and target > layer:
                violations.append(f"{where} (layer {layer} -> {target})")
            if target_top in FORBIDDEN.get(top, set()):
                violations.append(f"{where} (forbidden for {top}/)")
    assert violations == []
