""".gbbot.yml → a typed, frozen Config. Every error names the file, the key and what was expected."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gbbot.core import call_args
from gbbot.core.errors import ConfigError
from gbbot.core.model import Mode
from gbbot.core.schema import (
    SHOWN_CHARS,
    Map,
    Pairs,
    Seq,
    boolean,
    choice,
    fail,
    identifier,
    matching,
    positive,
    string,
    text,
    that,
    whole,
)

CONFIG_NAME = ".gbbot.yml"
DEFAULT_TIMEOUT_S = 900.0
NAME_RE = re.compile(r"[A-Za-z0-9_.-]+")
CALL_RE = call_args.TARGET
FAIL_ON = ("new", "any", "none")
# `fail_on: {breaks: …, recompiles: …}`: limit → only frames that newly hit the recompile limit.
FAIL_ON_RECOMPILES = ("limit", "new", "any", "none")
IGNORE_KEYS = ("gb_id", "gb_type", "path", "fingerprint", "entrypoint")
ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MODULE_RE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
# A branch name git accepts and a shell or URL cannot misread: no "..", no leading "-" or "/".
BRANCH_RE = re.compile(r"(?!.*\.\.)(?!.*//)[A-Za-z0-9_][A-Za-z0-9_./-]{0,99}(?<![./])")
MAX_REPEAT = 5
MAX_HISTORY = 100


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


# --- the schema: one table per mapping (gbbot/core/schema.py checks them) --------------------


def _pytest_args(path: str, key: str, value: Any) -> tuple[str, ...]:
    """A string is split like a shell would (`tests/test_x.py -k forward`); a list is taken as is."""
    if isinstance(value, list):
        found = Seq(string, "a list of strings")(path, key, value)
    else:
        try:
            found = tuple(shlex.split(string(path, key, value)))
        except ValueError as exc:
            raise ConfigError(path, key, f"cannot split into pytest arguments: {exc}") from None
    if not found:
        raise fail(path, key, "test ids, files or pytest arguments, e.g. tests/test_model.py::test_forward", value)
    return found


def _gpus(path: str, key: str, value: Any) -> str:
    if value == "all" or (isinstance(value, int) and not isinstance(value, bool) and value > 0):
        return str(value)
    raise fail(path, key, '"all" or a positive count', value)


def _env_value(path: str, key: str, value: Any) -> str:
    if isinstance(value, Mapping | list) or value is None:
        raise fail(path, key, "a string or number", value)
    return str(value).lower() if isinstance(value, bool) else str(value)


def _entrypoint_name(path: str, key: str, value: Any) -> str:
    """A name is also the entrypoint's directory under gbbot's work dir: '.' and '..' would be
    that directory itself or its parent."""
    name = matching(NAME_RE, "a name of letters, digits, '_', '.' or '-'")(path, key, value)
    if name in (".", ".."):
        raise ConfigError(path, key, f"{name!r} is not allowed: an entrypoint's name is also its directory's name")
    return name


def _logger_methods(path: str, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(m, str) and m.isidentifier() for m in value):
        raise fail(path, key, "a list of logging.Logger method names, e.g. [warning_once]", value)
    return tuple(value)


def _pairs(**found: Any) -> tuple[tuple[str, Any], ...]:
    return tuple(found.items())


# the Dynamo settings a model: entrypoint's compile may turn on (gbbot's own compile-site fixes)
DYNAMO = Map(
    {
        "capture_scalar_outputs": boolean,
        "capture_dynamic_output_shape_ops": boolean,
        "allow_rnn": boolean,
        "nested_graph_breaks": boolean,
        "ignore_logging_functions": _logger_methods,
    },
    into=_pairs,
    expected="a mapping of Dynamo settings, e.g. {capture_scalar_outputs: true}",
    unknown="unknown Dynamo setting; known: {known}",
    first=True,
)
# torch.compile's options a model: entrypoint may set
COMPILE = Map(
    {
        "fullgraph": boolean,
        "dynamic": that(lambda value: value is None or isinstance(value, bool), "true, false or null"),
        "mode": text("a string"),
        "backend": text("a string"),
        "dynamo": DYNAMO,
    },
    into=_pairs,
    expected="a mapping of torch.compile options, e.g. {fullgraph: false, dynamic: false}",
    unknown="unknown torch.compile option; known: {known}",
    first=True,
)

KINDS = ("run", "call", "pytest", "model")
# keys only some kinds of entrypoint take, and what is said to the others
ONLY_FOR = {
    "args": (("call", "model"), "arguments are for 'call' and 'model' entrypoints only"),
    "kwargs": (("call", "model"), "arguments are for 'call' and 'model' entrypoints only"),
    **{
        name: (("model",), "is for 'model' entrypoints only")
        for name in ("method", "compile", "inputs", "input_kwargs", "train")
    },
    # the others' output is not theirs alone (pytest's report, the launcher's): their result is compared
    "verify_output": (("run",), "is for 'run' entrypoints only"),
}


def _one_kind(path: str, key: str, found: dict[str, Any]) -> None:
    kinds = [kind for kind in KINDS if kind in found]
    if len(kinds) != 1:
        raise ConfigError(
            path,
            key,
            "needs exactly one of 'run' (a command), 'call' (module:function), 'pytest' (tests to run) "
            "or 'model' (module:Class, an nn.Module to build and compile)",
        )
    for name, (kinds_taking, message) in ONLY_FOR.items():
        if name in found and kinds[0] not in kinds_taking:
            raise ConfigError(path, f"{key}.{name}", message)
    if "args" in found or "kwargs" in found:
        call_args.check_size(path, key, found.get("args", ()), found.get("kwargs", ()))


ENTRYPOINT = Map(
    {
        "name": _entrypoint_name,
        "run": string,
        "call": matching(CALL_RE, "'module:function', e.g. mypkg.bench:forward_once"),
        "model": matching(CALL_RE, "'module:Class', e.g. mypkg.model:GPT"),
        "method": identifier("a method name, e.g. forward or generate"),
        "compile": COMPILE,
        "inputs": call_args.check_args,
        "input_kwargs": call_args.check_kwargs,
        "train": boolean,
        "timeout": positive("seconds"),
        "env": Pairs(matching(ENV_NAME_RE, "an environment variable name"), _env_value, "a mapping of NAME: value"),
        "verify_output": boolean,
        "pytest": _pytest_args,
        "args": call_args.check_args,
        "kwargs": call_args.check_kwargs,
    },
    required=("name",),
    rule=_one_kind,
    into=Entrypoint,
)


def _entrypoints(path: str, key: str, value: Any) -> tuple[Entrypoint, ...]:
    entrypoints = Seq(ENTRYPOINT, "a non-empty list of entrypoints", non_empty=True, first=False)(path, key, value)
    seen: set[str] = set()
    for i, entrypoint in enumerate(entrypoints):
        if entrypoint.name in seen:
            raise ConfigError(path, f"{key}[{i}].name", f"duplicate entrypoint name {entrypoint.name!r}")
        seen.add(entrypoint.name)
    return entrypoints


def _not_empty(path: str, key: str, found: dict[str, Any]) -> None:
    if not found:
        raise ConfigError(path, key, f"an empty rule would ignore everything; use one of {', '.join(IGNORE_KEYS)}")


def _container_needs_image(path: str, key: str, found: dict[str, Any]) -> None:
    if found.get("backend") == "container" and not found.get("image"):
        raise ConfigError(path, f"{key}.image", "the container backend needs an image")


RUNNER = Map(
    {
        "backend": choice("local", "container"),
        "image": string,
        "gpus": _gpus,
        "network": choice("none", "host"),
        "memory": string,
        "cpus": positive("CPUs"),
        "warm": boolean,
        "preload": Seq(
            matching(MODULE_RE, "a module name, e.g. transformers"), "a list of module names, e.g. [transformers]"
        ),
    },
    rule=_container_needs_image,
    into=BackendSettings,
)
AUDIT = Map(
    {
        "branch": matching(BRANCH_RE, "a branch name such as gbbot-data (letters, digits, '_', '.', '-', '/')"),
        "repeat": whole(1, MAX_REPEAT),
        "history": whole(2, MAX_HISTORY),
        "open_fix_pr": boolean,
    },
    into=Audit,
)
FAIL_ON_MAP = Map({"breaks": choice(*FAIL_ON), "recompiles": choice(*FAIL_ON_RECOMPILES)})


def _fail_on(path: str, key: str, value: Any) -> tuple[str, str | None]:
    """`new` (breaks; recompiles keep their default) or `{breaks: new, recompiles: new}`."""
    if not isinstance(value, Mapping):
        return choice(*FAIL_ON)(path, key, value), None
    found = FAIL_ON_MAP(path, key, value)
    if not found:
        raise fail(path, key, "one of " + ", ".join(FAIL_ON) + ", or a mapping with breaks: and recompiles:", value)
    return found.get("breaks", "new"), found.get("recompiles")


def _setup_runs_locally(path: str, key: str, found: dict[str, Any]) -> None:
    runner = found.get("runner", BackendSettings())
    if found.get("setup") and runner.backend != "local":
        raise ConfigError(
            path,
            "setup",
            f"runs in gbbot's own environment, which the {runner.backend} backend's entrypoints do not use: "
            "install their packages in runner.image instead",
        )


TOP = Map(
    {
        "version": that(lambda value: value == 1 and not isinstance(value, bool), "1 (the only config version)"),
        "entrypoints": _entrypoints,
        "mode": lambda path, key, value: Mode(choice(*(m.value for m in Mode))(path, key, value)),
        "fail_on": _fail_on,
        "ignore": Seq(
            Map({name: string for name in IGNORE_KEYS}, rule=_not_empty, into=IgnoreRule),
            "a list of rules like {gb_id: GB0059, path: 'scripts/**'}",
        ),
        "header": matching(NAME_RE, "a short name of letters, digits, '_', '.' or '-'"),
        "scrub_env": Seq(string, "a list of strings"),
        "pass_env": Seq(string, "a list of strings"),
        "runner": RUNNER,
        "audit": AUDIT,
        "autofix": boolean,
        "setup": Seq(
            string, "a non-empty list of shell commands, e.g. [pip install -r requirements.txt]", non_empty=True
        ),
    },
    required=("version", "entrypoints"),
    rule=_setup_runs_locally,
)


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


def _at(node: yaml.Node) -> str:
    return f"line {node.start_mark.line + 1}, column {node.start_mark.column + 1}"


def _shown_scalar(node: yaml.ScalarNode) -> str:
    text = node.value
    return repr(text) if len(text) <= SHOWN_CHARS else repr(text[: SHOWN_CHARS - 3] + "...")


def _children(path: str, node: yaml.Node) -> list[yaml.Node]:
    """A node's children, once its own checks pass: an integer's digits, and duplicate keys
    (PyYAML keeps the last silently, so `timeout:` written twice would hide one)."""
    if isinstance(node, yaml.ScalarNode):
        digits = len(node.value.lstrip("+-").replace("_", ""))
        if node.tag == INT_TAG and digits > MAX_INT_DIGITS:
            raise ConfigError(path, None, f"{_at(node)}: an integer of {digits} digits (at most {MAX_INT_DIGITS})")
        return []
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    seen: dict[tuple[str, str], yaml.Node] = {}
    for key in (key for key, _ in node.value if isinstance(key, yaml.ScalarNode) and key.tag != MERGE_TAG):
        first = seen.setdefault((key.tag, key.value), key)
        if first is not key:
            lines = f"lines {first.start_mark.line + 1} and {key.start_mark.line + 1}"
            raise ConfigError(path, None, f"duplicate key {_shown_scalar(key)} on {lines}")
    return [item for pair in node.value for item in pair]


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
        stack.extend((child, in_copy or again, depth + 1) for child in _children(path, node))


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
    fields = TOP(path, "", document)
    fields.pop("version")
    if "fail_on" in fields:
        fields["fail_on"], fields["fail_on_recompiles"] = fields["fail_on"]
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
