""".gbbot.yml → a typed, frozen Config. Every error names the file, the key and what was expected."""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import os
import re
import reprlib
import shlex
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gbbot.core import call_args
from gbbot.core.errors import ConfigError, ConfigErrors
from gbbot.core.model import Mode

CONFIG_NAME = ".gbbot.yml"
DEFAULT_TIMEOUT_S = 900.0
NAME_RE = re.compile(r"[A-Za-z0-9_.-]+")
CALL_RE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")
FAIL_ON = ("new", "any", "none")
# `fail_on: {breaks: …, recompiles: …}`: limit → only frames that newly hit the recompile limit.
FAIL_ON_RECOMPILES = ("limit", "new", "any", "none")
IGNORE_KEYS = ("gb_id", "gb_type", "path", "fingerprint", "entrypoint")


@dataclass(frozen=True)
class Entrypoint:
    name: str
    run: str | None = None  # a shell command, cwd = repo root
    call: str | None = None  # "module:function", called with `args` and `kwargs`
    pytest: tuple[str, ...] | None = None  # pytest arguments: node ids, files, -k/-m expressions
    timeout: float = DEFAULT_TIMEOUT_S
    env: tuple[tuple[str, str], ...] = ()
    verify_output: bool = False  # fix verification also compares a run: entrypoint's stdout
    args: tuple[Any, ...] = ()  # call: positional arguments (model: the constructor's), literals and tensor specs
    kwargs: tuple[tuple[str, Any], ...] = ()  # call: keyword arguments (model: the constructor's), in order
    model: str | None = None  # "module:Class": built, compiled and called with `inputs`
    method: str = "forward"  # model: the method compiled and called
    compile: tuple[tuple[str, Any], ...] = ()  # model: torch.compile's options (fullgraph, dynamic, mode, backend)
    inputs: tuple[Any, ...] = ()  # model: the positional inputs of `method`
    input_kwargs: tuple[tuple[str, Any], ...] = ()  # model: its keyword inputs
    train: bool = False  # model: keep training mode (default: eval())

    @property
    def kind(self) -> str:
        kinds = (("run", self.run), ("call", self.call), ("model", self.model))
        return next((kind for kind, value in kinds if value is not None), "pytest")

    @property
    def returns_result(self) -> bool:
        """Its return value is saved, and fix verification compares it: call: and model: entrypoints."""
        return self.kind in ("call", "model")


@dataclass(frozen=True)
class IgnoreRule:
    gb_id: str | None = None
    gb_type: str | None = None
    path: str | None = None  # a glob over repo-relative paths, `**` crosses directories
    fingerprint: str | None = None
    entrypoint: str | None = None


@dataclass(frozen=True)
class BackendSettings:
    """Where entrypoints run: `local` subprocesses, or sibling `container`s (GPU runners)."""

    backend: str = "local"
    image: str | None = None
    gpus: str | None = None  # "all", a count, or None
    network: str = "none"
    memory: str | None = None
    cpus: float | None = None
    warm: bool = True  # local: Python entrypoints forked from a server that imported torch once
    # modules that server imports besides torch, e.g. [transformers]; None (not given): it learns them,
    # importing what each child imported from the installation once, for the later children
    preload: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Audit:
    """The scheduled audit of the default branch: where its history is kept, how many runs make
    one record (a break seen in only some of them is flaky), how many records the issue charts."""

    branch: str = "gbbot-data"
    repeat: int = 1
    history: int = 30
    # Fix what the audit found on a branch of gbbot's own and open (or update) one PR from it.
    # Off by default: it pushes a branch and needs `pull-requests: write` in the workflow.
    open_fix_pr: bool = False


@dataclass(frozen=True)
class Config:
    path: str
    entrypoints: tuple[Entrypoint, ...]
    mode: Mode = Mode.FAST
    fail_on: str = "new"  # for graph breaks: the string form, or the mapping's `breaks`
    fail_on_recompiles: str | None = None  # the mapping's `recompiles`; None: the default (report.py)
    ignore: tuple[IgnoreRule, ...] = ()
    header: str | None = None
    scrub_env: tuple[str, ...] = ()
    pass_env: tuple[str, ...] = ()  # more names (fnmatch globs) entrypoints inherit from gbbot
    runner: BackendSettings = field(default_factory=BackendSettings)
    audit: Audit = field(default_factory=Audit)
    autofix: bool = False  # the PR check pushes verified fixes of new breaks (same-repository PRs)
    # Shell commands that build the entrypoints' environment (`pip install -r requirements.txt`),
    # run once, in order, before them: by the action always, by `gbbot check|diff --setup`.
    setup: tuple[str, ...] = ()
    digest: str = ""  # hash of the parsed config, for baseline cache keys

    def entrypoint(self, name: str) -> Entrypoint | None:
        return next((e for e in self.entrypoints if e.name == name), None)


# --- a small declared schema ---------------------------------------------------------------

Check = Callable[[str, str, Any], Any]  # (file, key, value) -> converted value


def _fail(path: str, key: str, expected: str, value: Any) -> ConfigError:
    return ConfigError(path, key, f"expected {expected}, got {_show(value)}")


# A config value quoted in an error is cut to this: the value may be anything the file's author
# (or a pull request's) wrote, and the message goes to a terminal, a log and a PR comment.
SHOWN_CHARS = 80
_SHORT_REPR = reprlib.Repr()
_SHORT_REPR.maxlevel = 2
_SHORT_REPR.maxdict = _SHORT_REPR.maxlist = _SHORT_REPR.maxtuple = _SHORT_REPR.maxset = 4
_SHORT_REPR.maxstring = _SHORT_REPR.maxlong = SHOWN_CHARS  # maxlong cuts the digits of a long int


def _show(value: Any) -> str:
    """A bounded rendering: reprlib elides inside strings, containers and long integers, so no
    step builds the repr of a huge value only to cut it."""
    if value is None:
        return "nothing (null)"
    text = _SHORT_REPR.repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def _string(path: str, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _fail(path, key, "a non-empty string", value)
    return value


MAX_NUMBER = 1_000_000  # seconds (11 days) or CPUs: larger is a typo, and overflows timers


def _number(path: str, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise _fail(path, key, "a positive number of seconds", value)
    # .nan compares false with everything and .inf passes `> 0`: both must be refused here
    if not (isinstance(value, int) or math.isfinite(value)) or value > MAX_NUMBER:
        raise _fail(path, key, f"a finite positive number of at most {MAX_NUMBER}", value)
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


MODULE_RE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def _modules(path: str, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise _fail(path, key, "a list of module names, e.g. [transformers]", value)
    check = _matching(MODULE_RE, "a module name, e.g. transformers")
    return tuple(check(path, f"{key}[{i}]", v) for i, v in enumerate(value))


def _pytest_args(path: str, key: str, value: Any) -> tuple[str, ...]:
    """A string is split like a shell would (`tests/test_x.py -k forward`); a list is taken as is."""
    if isinstance(value, list):
        return _string_list(path, key, value) or _fail_empty(path, key, value)
    text = _string(path, key, value)
    try:
        return tuple(shlex.split(text)) or _fail_empty(path, key, value)
    except ValueError as exc:
        raise ConfigError(path, key, f"cannot split into pytest arguments: {exc}") from None


def _setup(path: str, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise _fail(path, key, "a non-empty list of shell commands, e.g. [pip install -r requirements.txt]", value)
    return tuple(_string(path, f"{key}[{i}]", v) for i, v in enumerate(value))


def _fail_empty(path: str, key: str, value: Any) -> tuple[str, ...]:
    raise _fail(path, key, "test ids, files or pytest arguments, e.g. tests/test_model.py::test_forward", value)


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
    errors: list[ConfigError] = []
    meant: set[str] = set()  # a misspelt required key is one problem, not two
    for name in value:
        if name not in fields:
            close = difflib.get_close_matches(str(name), list(fields), n=1)
            meant.update(close)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(fields)}"
            errors.append(ConfigError(path, f"{prefix}{name}", f"unknown key{hint}"))
    missing = [name for name in required if name not in value and name not in meant]
    errors += [ConfigError(path, f"{prefix}{name}", "required key is missing") for name in missing]
    checked = _every(
        [
            (name, lambda name=name, v=v: fields[name](path, f"{prefix}{name}", v))
            for name, v in value.items()
            if name in fields
        ],
        errors,
    )
    return dict(checked)


def _every(
    checks: list[tuple[Any, Callable[[], Any]]], errors: list[ConfigError] | None = None
) -> list[tuple[Any, Any]]:
    """Run every check, keeping what each returned; the problems of all of them (and `errors`,
    found before) raised together."""
    errors = list(errors or ())
    done = []
    for label, check in checks:
        try:
            done.append((label, check()))
        except ConfigError as exc:
            errors.append(exc)
    if errors:
        raise ConfigErrors.of(errors)
    return done


def _entrypoint_name(path: str, key: str, value: Any) -> str:
    """A name is also the entrypoint's directory under gbbot's work dir: '.' and '..' would be
    that directory itself or its parent."""
    name = _matching(NAME_RE, "a name of letters, digits, '_', '.' or '-'")(path, key, value)
    if name in (".", ".."):
        raise ConfigError(path, key, f"{name!r} is not allowed: an entrypoint's name is also its directory's name")
    return name


# torch.compile's options a model: entrypoint may set, and what each must be
COMPILE_OPTIONS = {
    "fullgraph": "true or false",
    "dynamic": "true, false or null",
    "mode": "a string",
    "backend": "a string",
    "dynamo": "a mapping of Dynamo settings, e.g. {capture_scalar_outputs: true}",
}
# the Dynamo settings a model: entrypoint's compile may turn on (gbbot's own compile-site fixes)
DYNAMO_SETTINGS = (
    "capture_scalar_outputs",
    "capture_dynamic_output_shape_ops",
    "allow_rnn",
    "nested_graph_breaks",
    "ignore_logging_functions",
)
LISTS = ("ignore_logging_functions",)


def _dynamo_settings(path: str, key: str, value: Any) -> tuple[tuple[str, Any], ...]:
    """`dynamo: {capture_scalar_outputs: true, ignore_logging_functions: [warning_once]}`."""
    if not isinstance(value, Mapping):
        raise _fail(path, key, COMPILE_OPTIONS["dynamo"], value)
    checked: list[tuple[str, Any]] = []
    for name, item in value.items():
        if name not in DYNAMO_SETTINGS:
            raise ConfigError(path, f"{key}.{name}", f"unknown Dynamo setting; known: {', '.join(DYNAMO_SETTINGS)}")
        methods = isinstance(item, list) and all(isinstance(m, str) and m.isidentifier() for m in item)
        valid = methods if name in LISTS else isinstance(item, bool)
        if not valid:
            want = "a list of logging.Logger method names, e.g. [warning_once]" if name in LISTS else "true or false"
            raise _fail(path, f"{key}.{name}", want, item)
        checked.append((name, tuple(item) if isinstance(item, list) else item))
    return tuple(checked)


def _compile_options(path: str, key: str, value: Any) -> tuple[tuple[str, Any], ...]:
    if not isinstance(value, Mapping):
        raise _fail(path, key, "a mapping of torch.compile options, e.g. {fullgraph: false, dynamic: false}", value)
    checked = []
    for name, item in value.items():
        if name not in COMPILE_OPTIONS:
            raise ConfigError(
                path, f"{key}.{name}", f"unknown torch.compile option; known: {', '.join(COMPILE_OPTIONS)}"
            )
        if name == "dynamo":
            checked.append((name, _dynamo_settings(path, f"{key}.{name}", item)))
            continue
        valid = {
            "fullgraph": isinstance(item, bool),
            "dynamic": item is None or isinstance(item, bool),
        }.get(name, isinstance(item, str) and bool(item.strip()))
        if not valid:
            raise _fail(path, f"{key}.{name}", COMPILE_OPTIONS[name], item)
        checked.append((name, item))
    return tuple(checked)


def _identifier(path: str, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.isidentifier():
        raise _fail(path, key, "a method name, e.g. forward or generate", value)
    return value


KINDS = ("run", "call", "pytest", "model")
MODEL_ONLY = ("method", "compile", "inputs", "input_kwargs", "train")

ENTRYPOINT_FIELDS: dict[str, Check] = {
    "name": _entrypoint_name,
    "run": _string,
    "call": _matching(CALL_RE, "'module:function', e.g. mypkg.bench:forward_once"),
    "model": _matching(CALL_RE, "'module:Class', e.g. mypkg.model:GPT"),
    "method": _identifier,
    "compile": _compile_options,
    "inputs": call_args.check_args,
    "input_kwargs": call_args.check_kwargs,
    "train": _boolean,
    "timeout": _number,
    "env": _env,
    "verify_output": _boolean,
    "pytest": _pytest_args,
    "args": call_args.check_args,
    "kwargs": call_args.check_kwargs,
}
IGNORE_FIELDS: dict[str, Check] = {name: _string for name in IGNORE_KEYS}
BACKEND_FIELDS: dict[str, Check] = {
    "backend": _choice("local", "container"),
    "image": _string,
    "gpus": _gpus,
    "network": _choice("none", "host"),
    "memory": _string,
    "cpus": _number,
    "warm": _boolean,
    "preload": _modules,
}


def _entrypoint(path: str, key: str, value: Any) -> Entrypoint:
    fields = _mapping(path, key, value, ENTRYPOINT_FIELDS, required=("name",))
    if sum(kind in fields for kind in KINDS) != 1:
        raise ConfigError(
            path,
            key,
            "needs exactly one of 'run' (a command), 'call' (module:function), 'pytest' (tests to run) "
            "or 'model' (module:Class, an nn.Module to build and compile)",
        )
    for name in ("args", "kwargs"):
        if name in fields and "call" not in fields and "model" not in fields:
            raise ConfigError(path, f"{key}.{name}", "arguments are for 'call' and 'model' entrypoints only")
    for name in MODEL_ONLY:
        if name in fields and "model" not in fields:
            raise ConfigError(path, f"{key}.{name}", "is for 'model' entrypoints only")
    if "args" in fields or "kwargs" in fields:
        call_args.check_size(path, key, fields.get("args", ()), fields.get("kwargs", ()))
    return Entrypoint(**fields)


def _entrypoints(path: str, key: str, value: Any) -> tuple[Entrypoint, ...]:
    if not isinstance(value, list) or not value:
        raise _fail(path, key, "a non-empty list of entrypoints", value)
    checks = [(i, lambda i=i, v=v: _entrypoint(path, f"{key}[{i}]", v)) for i, v in enumerate(value)]
    entrypoints = tuple(entrypoint for _, entrypoint in _every(checks))
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


def _runner(path: str, key: str, value: Any) -> BackendSettings:
    runner = BackendSettings(**_mapping(path, key, value, BACKEND_FIELDS))
    if runner.backend == "container" and not runner.image:
        raise ConfigError(path, f"{key}.image", "the container backend needs an image")
    return runner


# A branch name git accepts and a shell or URL cannot misread: no "..", no leading "-" or "/".
BRANCH_RE = re.compile(r"(?!.*\.\.)(?!.*//)[A-Za-z0-9_][A-Za-z0-9_./-]{0,99}(?<![./])")
MAX_REPEAT = 5
MAX_HISTORY = 100


def _bounded_count(low: int, high: int) -> Check:
    def check(path: str, key: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise _fail(path, key, f"a whole number from {low} to {high}", value)
        return value

    return check


AUDIT_FIELDS: dict[str, Check] = {
    "branch": _matching(BRANCH_RE, "a branch name such as gbbot-data (letters, digits, '_', '.', '-', '/')"),
    "repeat": _bounded_count(1, MAX_REPEAT),
    "history": _bounded_count(2, MAX_HISTORY),
    "open_fix_pr": _boolean,
}


def _audit(path: str, key: str, value: Any) -> Audit:
    return Audit(**_mapping(path, key, value, AUDIT_FIELDS))


def _fail_on(path: str, key: str, value: Any) -> tuple[str, str | None]:
    """`new` (breaks; recompiles keep their default) or `{breaks: new, recompiles: new}`."""
    if not isinstance(value, Mapping):
        return _choice(*FAIL_ON)(path, key, value), None
    fields = _mapping(path, key, value, {"breaks": _choice(*FAIL_ON), "recompiles": _choice(*FAIL_ON_RECOMPILES)})
    if not fields:
        raise _fail(path, key, "one of " + ", ".join(FAIL_ON) + ", or a mapping with breaks: and recompiles:", value)
    return fields.get("breaks", "new"), fields.get("recompiles")


def _version(path: str, key: str, value: Any) -> int:
    if value != 1 or isinstance(value, bool):
        raise _fail(path, key, "1 (the only config version)", value)
    return 1


TOP_FIELDS: dict[str, Check] = {
    "version": _version,
    "entrypoints": _entrypoints,
    "mode": _choice(*(m.value for m in Mode)),
    "fail_on": _fail_on,
    "ignore": _ignore,
    "header": _matching(NAME_RE, "a short name of letters, digits, '_', '.' or '-'"),
    "scrub_env": _string_list,
    "pass_env": _string_list,
    "runner": _runner,
    "audit": _audit,
    "autofix": _boolean,
    "setup": _setup,
}


# --- YAML loading, bounded -------------------------------------------------------------------
#
# The config comes from the repository under test, which on a pull request is the PR author's.
# Composing YAML is cheap even for hostile input: an alias is one more reference to an already
# composed node. Constructing Python values is what expands them (a "billion laughs" file of a few
# hundred bytes becomes gigabytes), so the composed graph is walked first, with budgets, and only
# a graph that passes is constructed.

MAX_ALIASES = 100  # a real config uses a handful of anchors, if any
MAX_NODES = 10_000  # nodes after expanding aliases; a large real config has a few hundred
MAX_DEPTH = 20  # .gbbot.yml's own structure is 4 levels deep
MAX_INT_DIGITS = 30  # Python refuses to parse ints over 4,300 digits with a ValueError, not a YAMLError
INT_TAG = "tag:yaml.org,2002:int"
MERGE_TAG = "tag:yaml.org,2002:merge"


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _at(node: yaml.Node) -> str:
    return f"line {_line(node)}, column {node.start_mark.column + 1}"


def _shown_scalar(node: yaml.ScalarNode) -> str:
    text = node.value
    return repr(text) if len(text) <= SHOWN_CHARS else repr(text[: SHOWN_CHARS - 3] + "...")


def _check_keys(path: str, node: yaml.MappingNode) -> None:
    """Duplicate keys: PyYAML keeps the last silently, so `timeout:` written twice would hide one."""
    seen: dict[tuple[str, str], yaml.Node] = {}
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode) or key.tag == MERGE_TAG:
            continue
        first = seen.setdefault((key.tag, key.value), key)
        if first is not key:
            raise ConfigError(
                path, None, f"duplicate key {_shown_scalar(key)} on lines {_line(first)} and {_line(key)}"
            )


def _check_scalar(path: str, node: yaml.ScalarNode) -> None:
    digits = len(node.value.lstrip("+-").replace("_", ""))
    if node.tag == INT_TAG and digits > MAX_INT_DIGITS:
        raise ConfigError(path, None, f"{_at(node)}: an integer of {digits} digits (at most {MAX_INT_DIGITS})")


def _check_graph(path: str, root: yaml.Node) -> None:
    """Walk the composed graph as construction would, aliases expanded, within the budgets. An
    alias is a node reached again from outside a copy being expanded; a cycle (`&a [*a]`) never
    ends, so it exceeds the depth limit."""
    seen: set[int] = set()
    aliases = nodes = 0
    stack: list[tuple[yaml.Node, bool, int]] = [(root, False, 0)]
    while stack:
        node, in_copy, depth = stack.pop()
        nodes += 1
        again = id(node) in seen
        aliases += again and not in_copy
        seen.add(id(node))
        if aliases > MAX_ALIASES or nodes > MAX_NODES:
            raise ConfigError(path, None, _too_big(aliases > MAX_ALIASES))
        if depth > MAX_DEPTH:
            raise ConfigError(path, None, f"{_at(node)}: nested more than {MAX_DEPTH} levels deep")
        children = _children(path, node)
        stack.extend((child, in_copy or again, depth + 1) for child in children)


def _children(path: str, node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.ScalarNode):
        _check_scalar(path, node)
        return []
    if isinstance(node, yaml.MappingNode):
        _check_keys(path, node)
        return [item for pair in node.value for item in pair]
    return list(node.value)


def _too_big(by_aliases: bool) -> str:
    limit = f"more than {MAX_ALIASES} aliases" if by_aliases else f"more than {MAX_NODES} values once aliases expand"
    return f"refused: YAML anchors and aliases make {limit} (a config needs far fewer)"


def _yaml_error(path: str, exc: yaml.YAMLError) -> ConfigError:
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
    problem = getattr(exc, "problem", None) or str(exc)
    return ConfigError(path, None, f"{where}invalid YAML: {problem}")


def _load_yaml(text: str, path: str) -> Any:
    """safe_load, with the composed graph checked (budgets, duplicate keys) before construction."""
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        _check_graph(path, root)
        return loader.construct_document(root)
    except yaml.YAMLError as exc:
        raise _yaml_error(path, exc) from None
    except RecursionError:
        # PyYAML's composer recurses once per level: `[[[[…` a few hundred deep ends here,
        # before _check_graph could count the levels
        raise ConfigError(path, None, f"refused: YAML nested more than {MAX_DEPTH} levels deep") from None
    finally:
        loader.dispose()


def parse_config(text: str, path: str = CONFIG_NAME) -> Config:
    """Pure: YAML text → Config, or ConfigError naming the file and key."""
    document = _load_yaml(text, path)
    if document is None:
        raise ConfigError(path, None, "the file is empty; it needs `version: 1` and `entrypoints:`")
    fields = _mapping(path, "", document, TOP_FIELDS, required=("version", "entrypoints"))
    fields.pop("version")
    if "mode" in fields:
        fields["mode"] = Mode(fields["mode"])
    if "fail_on" in fields:
        fields["fail_on"], fields["fail_on_recompiles"] = fields["fail_on"]
    runner = fields.get("runner", BackendSettings())
    if fields.get("setup") and runner.backend != "local":
        raise ConfigError(
            path,
            "setup",
            f"runs in gbbot's own environment, which the {runner.backend} backend's entrypoints do not use: "
            "install their packages in runner.image instead",
        )
    digest = hashlib.sha256(json.dumps(document, sort_keys=True, default=str).encode()).hexdigest()
    return Config(path=path, digest=digest[:16], **fields)


MAX_CONFIG_BYTES = 1 << 20


def _read_bounded(path: Path, inside: Path | None) -> str:
    """At most MAX_CONFIG_BYTES of a regular file (never a FIFO, which would block, or a device such
    as /dev/zero, which never ends); with `inside`, a link must lead to a file within it. The
    check is made on the opened file itself, so nothing can be swapped in after it."""
    if inside is not None:
        real, root = path.resolve(), inside.resolve()
        if not real.is_relative_to(root):
            raise ConfigError(str(path), None, f"it leads to {real}, outside the repository ({root})")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ConfigError(str(path), None, "not a regular file (a directory, FIFO, socket or device)")
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(str(path), None, f"larger than {MAX_CONFIG_BYTES} bytes: not a config gbbot reads")
    return data.decode("utf-8")


def load_config(path: Path, inside: Path | None = None) -> Config:
    """Read and parse a config file (the I/O edge of this module). `inside`: the repository the
    file must be in, links resolved (the default `.gbbot.yml` is the PR's to make a link)."""
    try:
        text = _read_bounded(path, inside)
    except FileNotFoundError:
        raise ConfigError(
            str(path),
            None,
            "no such file: run `gbbot init` to write a starter one from the repository's "
            "torch.compile call sites, add a .gbbot.yml at the repository root by hand, or pass --config PATH",
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(str(path), None, f"cannot read: {exc}") from None
    return parse_config(text, str(path))
