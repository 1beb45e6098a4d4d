""".gbbot.yml → a typed, frozen Config. Every error names the file, the key and what was expected."""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gbbot.errors import ConfigError
from gbbot.model import Mode

CONFIG_NAME = ".gbbot.yml"
DEFAULT_TIMEOUT_S = 900.0
NAME_RE = re.compile(r"[A-Za-z0-9_.-]+")
CALL_RE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")
FAIL_ON = ("new", "any", "none")
IGNORE_KEYS = ("gb_id", "gb_type", "path", "fingerprint", "entrypoint")


@dataclass(frozen=True)
class Entrypoint:
    name: str
    run: str | None = None  # a shell command, cwd = repo root
    call: str | None = None  # "module:function", zero arguments
    timeout: float = DEFAULT_TIMEOUT_S
    env: tuple[tuple[str, str], ...] = ()
    verify_output: bool = False  # fix verification also compares a run: entrypoint's stdout

    @property
    def kind(self) -> str:
        return "run" if self.run is not None else "call"


@dataclass(frozen=True)
class IgnoreRule:
    gb_id: str | None = None
    gb_type: str | None = None
    path: str | None = None  # a glob over repo-relative paths, `**` crosses directories
    fingerprint: str | None = None
    entrypoint: str | None = None


@dataclass(frozen=True)
class Runner:
    """Where entrypoints run: `local` subprocesses, or sibling `container`s (GPU runners)."""

    backend: str = "local"
    image: str | None = None
    gpus: str | None = None  # "all", a count, or None
    network: str = "none"
    memory: str | None = None
    cpus: float | None = None


@dataclass(frozen=True)
class Config:
    path: str
    entrypoints: tuple[Entrypoint, ...]
    mode: Mode = Mode.FAST
    fail_on: str = "new"
    ignore: tuple[IgnoreRule, ...] = ()
    header: str | None = None
    scrub_env: tuple[str, ...] = ()
    pass_env: tuple[str, ...] = ()  # more names (fnmatch globs) entrypoints inherit from gbbot
    runner: Runner = field(default_factory=Runner)
    digest: str = ""  # hash of the parsed config, for baseline cache keys

    def entrypoint(self, name: str) -> Entrypoint | None:
        return next((e for e in self.entrypoints if e.name == name), None)


# --- a small declared schema ---------------------------------------------------------------

Check = Callable[[str, str, Any], Any]  # (file, key, value) -> converted value


def _fail(path: str, key: str, expected: str, value: Any) -> ConfigError:
    return ConfigError(path, key, f"expected {expected}, got {_show(value)}")


def _show(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _string(path: str, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _fail(path, key, "a non-empty string", value)
    return value


def _number(path: str, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise _fail(path, key, "a positive number of seconds", value)
    return float(value)


def _boolean(path: str, key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise _fail(path, key, "true or false", value)
    return value


def _choice(*options: str) -> Check:
    def check(path: str, key: str, value: Any) -> str:
        if value not in options:
            raise _fail(path, key, "one of " + ", ".join(options), value)
        return value

    return check


def _matching(pattern: re.Pattern[str], what: str) -> Check:
    def check(path: str, key: str, value: Any) -> str:
        if not isinstance(value, str) or not pattern.fullmatch(value):
            raise _fail(path, key, what, value)
        return value

    return check


def _env(path: str, key: str, value: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, Mapping):
        raise _fail(path, key, "a mapping of NAME: value", value)
    items = []
    for name, item in value.items():
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise _fail(path, f"{key}.{name}", "an environment variable name", name)
        if isinstance(item, Mapping | list) or item is None:
            raise _fail(path, f"{key}.{name}", "a string or number", item)
        items.append((name, str(item).lower() if isinstance(item, bool) else str(item)))
    return tuple(items)


def _string_list(path: str, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise _fail(path, key, "a list of strings", value)
    return tuple(_string(path, f"{key}[{i}]", v) for i, v in enumerate(value))


def _gpus(path: str, key: str, value: Any) -> str:
    if value == "all" or (isinstance(value, int) and not isinstance(value, bool) and value > 0):
        return str(value)
    raise _fail(path, key, '"all" or a positive count', value)


def _mapping(
    path: str, key: str, value: Any, fields: dict[str, Check], required: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Check a mapping against `fields`: unknown keys get a did-you-mean, required keys exist."""
    if not isinstance(value, Mapping):
        raise _fail(path, key or "(top level)", "a mapping", value)
    prefix = f"{key}." if key else ""
    for name in value:
        if name not in fields:
            close = difflib.get_close_matches(str(name), list(fields), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(fields)}"
            raise ConfigError(path, f"{prefix}{name}", f"unknown key{hint}")
    for name in required:
        if name not in value:
            raise ConfigError(path, f"{prefix}{name}", "required key is missing")
    return {name: fields[name](path, f"{prefix}{name}", v) for name, v in value.items()}


def _entrypoint_name(path: str, key: str, value: Any) -> str:
    """A name is also the entrypoint's directory under gbbot's work dir: '.' and '..' would be
    that directory itself or its parent."""
    name = _matching(NAME_RE, "a name of letters, digits, '_', '.' or '-'")(path, key, value)
    if name in (".", ".."):
        raise ConfigError(path, key, f"{name!r} is not allowed: an entrypoint's name is also its directory's name")
    return name


ENTRYPOINT_FIELDS: dict[str, Check] = {
    "name": _entrypoint_name,
    "run": _string,
    "call": _matching(CALL_RE, "'module:function', e.g. mypkg.bench:forward_once"),
    "timeout": _number,
    "env": _env,
    "verify_output": _boolean,
}
IGNORE_FIELDS: dict[str, Check] = {name: _string for name in IGNORE_KEYS}
RUNNER_FIELDS: dict[str, Check] = {
    "backend": _choice("local", "container"),
    "image": _string,
    "gpus": _gpus,
    "network": _choice("none", "host"),
    "memory": _string,
    "cpus": _number,
}


def _entrypoint(path: str, key: str, value: Any) -> Entrypoint:
    fields = _mapping(path, key, value, ENTRYPOINT_FIELDS, required=("name",))
    if ("run" in fields) == ("call" in fields):
        raise ConfigError(path, key, "needs exactly one of 'run' (a command) or 'call' (module:function)")
    return Entrypoint(**fields)


def _entrypoints(path: str, key: str, value: Any) -> tuple[Entrypoint, ...]:
    if not isinstance(value, list) or not value:
        raise _fail(path, key, "a non-empty list of entrypoints", value)
    entrypoints = tuple(_entrypoint(path, f"{key}[{i}]", v) for i, v in enumerate(value))
    seen: set[str] = set()
    for i, entrypoint in enumerate(entrypoints):
        if entrypoint.name in seen:
            raise ConfigError(path, f"{key}[{i}].name", f"duplicate entrypoint name {entrypoint.name!r}")
        seen.add(entrypoint.name)
    return entrypoints


def _ignore(path: str, key: str, value: Any) -> tuple[IgnoreRule, ...]:
    if not isinstance(value, list):
        raise _fail(path, key, "a list of rules like {gb_id: GB0059, path: 'scripts/**'}", value)
    rules = []
    for i, item in enumerate(value):
        fields = _mapping(path, f"{key}[{i}]", item, IGNORE_FIELDS)
        if not fields:
            raise ConfigError(
                path, f"{key}[{i}]", f"an empty rule would ignore everything; use one of {', '.join(IGNORE_KEYS)}"
            )
        rules.append(IgnoreRule(**fields))
    return tuple(rules)


def _runner(path: str, key: str, value: Any) -> Runner:
    runner = Runner(**_mapping(path, key, value, RUNNER_FIELDS))
    if runner.backend == "container" and not runner.image:
        raise ConfigError(path, f"{key}.image", "the container backend needs an image")
    return runner


def _version(path: str, key: str, value: Any) -> int:
    if value != 1 or isinstance(value, bool):
        raise _fail(path, key, "1 (the only config version)", value)
    return 1


TOP_FIELDS: dict[str, Check] = {
    "version": _version,
    "entrypoints": _entrypoints,
    "mode": _choice(*(m.value for m in Mode)),
    "fail_on": _choice(*FAIL_ON),
    "ignore": _ignore,
    "header": _matching(NAME_RE, "a short name of letters, digits, '_', '.' or '-'"),
    "scrub_env": _string_list,
    "pass_env": _string_list,
    "runner": _runner,
}


def parse_config(text: str, path: str = CONFIG_NAME) -> Config:
    """Pure: YAML text → Config, or ConfigError naming the file and key."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(path, None, f"{where}invalid YAML: {problem}") from None
    if document is None:
        raise ConfigError(path, None, "the file is empty; it needs `version: 1` and `entrypoints:`")
    fields = _mapping(path, "", document, TOP_FIELDS, required=("version", "entrypoints"))
    fields.pop("version")
    if "mode" in fields:
        fields["mode"] = Mode(fields["mode"])
    digest = hashlib.sha256(json.dumps(document, sort_keys=True, default=str).encode()).hexdigest()
    return Config(path=path, digest=digest[:16], **fields)


def load_config(path: Path) -> Config:
    """Read and parse a config file (the I/O edge of this module)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            str(path), None, "no such file (add a .gbbot.yml at the repository root or pass --config PATH)"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(str(path), None, f"cannot read: {exc}") from None
    return parse_config(text, str(path))
