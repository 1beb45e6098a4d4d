"""A Dynamo setting written where gbbot compiles a `model:` entry: the entry's `compile: {dynamo:
{…}}` option in the configuration file, as an edit of its text (comments, order and style kept).
Pure over the text.

The file is read as YAML nodes, which know where each mapping starts and ends; the setting goes
into the entry's `dynamo:` mapping, or a `dynamo:` goes into its `compile:`, or a `compile:` into
the entry, in the mapping's own style (`{…, key: value}` or one more line at its indentation). The
edited text must load as the same configuration with the setting on, or there is no edit.
"""

from __future__ import annotations

from dataclasses import replace

import yaml

from gbbot.core.config import Config, ConfigError, Entrypoint, parse_config

Value = bool | tuple[str, ...]  # a flag turned on, or logger methods to ignore


def _value_text(value: Value) -> str:
    return "true" if value is True else "[" + ", ".join(value) + "]"  # type: ignore[union-attr]


def _key(node: yaml.MappingNode, name: str) -> yaml.Node | None:
    return next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == name), None)


def _named(entry: yaml.MappingNode) -> str | None:
    return getattr(_key(entry, "name"), "value", None)


def _entry(document: yaml.Node, name: str) -> yaml.MappingNode | None:
    entries = _key(document, "entrypoints") if isinstance(document, yaml.MappingNode) else None
    if not isinstance(entries, yaml.SequenceNode):
        return None
    found = [e for e in entries.value if isinstance(e, yaml.MappingNode) and _named(e) == name]
    return found[0] if len(found) == 1 else None


def _inserted(text: str, node: yaml.MappingNode, key: str, value: str) -> str:
    """`key: value` added to the mapping `node`, in its style."""
    if node.flow_style:
        close = node.end_mark.index - 1  # the closing brace
        before = text[:close].rstrip()
        comma = "" if before.endswith("{") else ", "
        return f"{text[: len(before)]}{comma}{key}: {value}{text[len(before) : close]}{text[close:]}"
    first, end = node.value[0][0], node.value[-1][1].end_mark
    lines = text.splitlines(keepends=True)
    ended = not lines[end.line][: end.column].strip() if end.line < len(lines) else True
    at = sum(len(s) for s in lines[: end.line if ended else end.line + 1])  # after the last value's line
    head = text[:at] if text[:at].endswith("\n") or not at else text[:at] + "\n"
    return f"{head}{' ' * first.start_mark.column}{key}: {value}\n{text[at:]}"


def _edited(text: str, entry: yaml.MappingNode, flag: str, value: Value) -> str | None:
    compile_node = _key(entry, "compile")
    if compile_node is None:
        return _inserted(text, entry, "compile", f"{{dynamo: {{{flag}: {_value_text(value)}}}}}")
    if not isinstance(compile_node, yaml.MappingNode):
        return None
    dynamo = _key(compile_node, "dynamo")
    if dynamo is None:
        return _inserted(text, compile_node, "dynamo", f"{{{flag}: {_value_text(value)}}}")
    if not isinstance(dynamo, yaml.MappingNode) or _key(dynamo, flag) is not None:
        return None  # a list to extend, or the flag already there (off, or on and still breaking)
    return _inserted(text, dynamo, flag, _value_text(value))


def turned_on(entry: Entrypoint | None, flag: str, value: Value) -> bool:
    if entry is None:
        return False
    settings = dict(dict(entry.compile).get("dynamo", ()))
    return settings.get(flag) == value


def with_setting(text: str, path: str, name: str, flag: str, value: Value = True) -> str | None:
    """The configuration `text` (file `path`) with `flag` set in the `model:` entry `name`'s
    `compile: {dynamo: …}`; None when the entry is not one, already names the flag, or the edit
    would not load as that."""
    try:
        config = parse_config(text, path)
        document = yaml.compose(text, Loader=yaml.SafeLoader)
    except (ConfigError, yaml.YAMLError):
        return None
    entry = config.entrypoint(name)
    node = _entry(document, name) if document is not None else None
    if entry is None or entry.kind != "model" or node is None:
        return None
    edited = _edited(text, node, flag, value)
    try:
        after = parse_config(edited, path) if edited is not None else None
    except ConfigError:
        return None
    if after is None or not turned_on(after.entrypoint(name), flag, value):
        return None

    def rest(c: Config) -> Config:  # everything but this entry's compile options
        entries = tuple(replace(e, compile=()) if e.name == name else e for e in c.entrypoints)
        return replace(c, entrypoints=entries, digest="")

    return edited if rest(after) == rest(config) else None


def already(text: str, path: str, name: str, flag: str, value: Value) -> bool:
    """Is the setting on in the entry's `compile:` option already (another fix's edit put it there)?"""
    try:
        return turned_on(parse_config(text, path).entrypoint(name), flag, value)
    except ConfigError:
        return False
