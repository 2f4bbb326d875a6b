"""Reading YAML configuration files safely: bounded size and alias expansion, strict UTF-8,
``${VAR}`` expansion from the environment, validation into a pydantic model, and one-line
ConfigErrors naming the file (and the line or key) on any problem."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

# reading text and ${VAR} expansion live apart, where commands that read no YAML file
# (a --command-config properties file, a named cluster) find them without importing YAML
from offsetkeeper.config.textfile import expand_env, read_text_strict
from offsetkeeper.errors import ConfigError

M = TypeVar("M", bound=BaseModel)


# Bounds of every YAML file (besides MAX_CONFIG_BYTES), checked before and while parsing: a config with
# nested anchors (a "billion laughs" YAML bomb) once grew to 4.8 GB when its aliases were expanded.
MAX_YAML_ALIASES = 1_000             # `*name` references in one document
MAX_YAML_NODES = 1_000_000           # scalars, lists and mappings, aliases expanded


class InputTooLarge(ValueError):
    """A YAML document beyond the bounds above (the message says which)."""


class DuplicateKey(ValueError):
    """A mapping names one key twice (YAML would silently keep the last)."""


class _Loader(yaml.SafeLoader):
    """YAML without implicit timestamps: `2026-02-30` or `09:40` stay the strings the user
    wrote (parsed and checked where they are used) instead of failing inside the YAML parser.

    Bounded: at most MAX_YAML_ALIASES aliases, and at most MAX_YAML_NODES nodes once every
    alias is expanded (counted on the composed graph, before anything is built), so nested
    anchors cannot expand into gigabytes; a recursive alias is refused."""

    def __init__(self, stream) -> None:
        super().__init__(stream)
        self._aliases = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_YAML_ALIASES:
                raise InputTooLarge(f"more than {MAX_YAML_ALIASES:,} YAML aliases (the limit)")
        return super().compose_node(parent, index)

    def construct_document(self, node):
        expanded_size(node, MAX_YAML_NODES)
        return super().construct_document(node)

    def construct_mapping(self, node, deep=False):
        # Before merge keys (`<<: *base`) are flattened in: overriding a merged key is meant,
        # writing one key twice is a mistake that must not pass silently.
        if isinstance(node, yaml.MappingNode):
            seen: set = set()
            for key_node, _v in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(
                        key_node, yaml.ScalarNode):
                    continue
                if key_node.value in seen:
                    raise DuplicateKey(f"key {key_node.value[:80]!r} appears twice in one mapping "
                                       f"(line {key_node.start_mark.line + 1})")
                seen.add(key_node.value)
        return super().construct_mapping(node, deep=deep)


def expanded_size(root: yaml.Node, limit: int) -> int:
    """Nodes of a composed YAML graph with every alias expanded (shared nodes counted once per
    reference): linear in the graph, InputTooLarge beyond `limit` or for a recursive alias."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:   # iterative post-order: deep nesting cannot exhaust Python's stack
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            total = 1 + sum(sizes[id(c)] for c in _children(node))
            if total > limit:
                raise InputTooLarge(f"more than {limit:,} YAML nodes once its aliases are "
                                    "expanded (the limit; nested anchors?)")
            sizes[key] = total
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise InputTooLarge("a YAML alias refers to a node that contains it (recursive)")
        on_path.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in on_path:
                raise InputTooLarge("a YAML alias refers to a node that contains it (recursive)")
            if id(child) not in sizes:
                stack.append((child, False))
    return sizes[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [x for kv in node.value for x in kv]
    return []


_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_yaml_model(path: str | Path, model: type[M], *, kind: str, lazy: tuple[str, ...] = ()) -> M:
    """Read a YAML file into `model`: ${ENV} expanded (except under the top-level keys in
    `lazy`), one-line ConfigError on any problem (`kind` names the file, e.g. "backup file")."""
    p = Path(path).expanduser()
    text = read_text_strict(p, kind=kind)
    try:
        raw = yaml.load(text, Loader=_Loader) or {}
    except InputTooLarge as exc:
        raise ConfigError(f"{kind} {p} is refused: {exc}") from None
    except DuplicateKey as exc:
        raise ConfigError(f"{kind} {p}: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{kind} {p} is nested too deeply to read") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{kind} {p} is not valid YAML: {_first_line(exc)}") from exc
    except ValueError as exc:
        raise ConfigError(f"{kind} {p} holds a value YAML cannot read: {_first_line(exc)}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{kind} {p} must hold a mapping at the top level")
    expanded = {k: (v if k in lazy else expand_env(v, where=str(p))) for k, v in raw.items()}
    try:
        return model.model_validate(expanded)
    except ValidationError as exc:
        errors = exc.errors()
        # An unknown key usually explains a "missing" one (a typo): report it first.
        err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        loc = ".".join(str(x) for x in err["loc"])
        if err["type"] == "extra_forbidden":
            raise ConfigError(f"{kind} {p}: unknown key '{loc}'") from None
        raise ConfigError(f"{kind} {p}: '{loc}' {err['msg'].lower()}") from None


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0]
