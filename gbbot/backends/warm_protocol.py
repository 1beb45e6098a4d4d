"""The messages gbbot and the warm server (warm_server.py) exchange over their socket: one JSON
object a line, each tagged with its `type`, each a frozen dataclass here.

gbbot → server: `Installed` (once, what learning may import), `Fork` (a child to start:
`ChildSpec`, with `standby` a child that waits for its turn) and `Go` (a standby child's turn has
come). Server → gbbot: `Ready` once (its `reason` says
why it cannot serve), then per request `Forked` (the child runs in its own session) or `Refused`,
and after `Forked`, `Exited` (a negative code: killed by that signal).

Both sides read what crosses the process boundary with `decode`, which checks every field's type
and refuses unknown types, missing and unexpected fields (ProtocolError): the server's children
run pull-request code, so neither side trusts a line it did not just check. Standard library only:
the server loads this file by path (it never imports the gbbot package, see warm_server).
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass
from typing import Any, ClassVar

MAX_LINE_BYTES = 16 << 20  # a spec carries an environment; anything past this is not a message
KINDS = ("script", "module")


class ProtocolError(ValueError):
    """A line that is not one of the messages below, as this module declares it."""


@dataclass(frozen=True)
class ChildSpec:
    """What the server needs to fork the child of one entrypoint (gbbot's warm.spec_of makes it)."""

    standby: bool  # forked before its turn: it imports `expected` and waits for Go
    expected: tuple[str, ...]  # the installed modules its program imports first (expected_imports)
    kind: str  # "script" | "module"
    target: str  # the script's path, or the module's name
    args: tuple[str, ...]
    program: str  # argv[0] as written, for the interpreter's own messages
    cwd: str
    env: dict[str, str]
    stdout: str  # files the child's stdout and stderr go to
    stderr: str
    shim: str  # gbbot's sitecustomize (fast mode, timed calls)
    reads: str  # where the child leaves the record of what it read
    learned: str | None  # where it leaves the installed modules it imported (None: it does not)
    unrecorded: tuple[str, ...]  # gbbot's own files and the run's directory: never recorded as read

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ProtocolError(f"kind {self.kind!r} is neither of {KINDS}")


@dataclass(frozen=True)
class Fork:
    type: ClassVar[str] = "fork"
    id: int
    child: ChildSpec


@dataclass(frozen=True)
class Go:
    type: ClassVar[str] = "go"
    id: int


@dataclass(frozen=True)
class Installed:
    """Sent once, right after Ready: the top-level names the installation held before any code of
    the repository ran. A learning server imports no module whose top-level name is not one."""

    type: ClassVar[str] = "installed"
    names: tuple[str, ...]


@dataclass(frozen=True)
class Ready:
    type: ClassVar[str] = "ready"
    reason: str | None  # None: the server forks children; else why it cannot


@dataclass(frozen=True)
class Forked:
    type: ClassVar[str] = "forked"
    id: int
    pid: int


@dataclass(frozen=True)
class Refused:
    type: ClassVar[str] = "refused"
    id: int
    reason: str


@dataclass(frozen=True)
class Exited:
    type: ClassVar[str] = "exited"
    id: int
    code: int  # as os.waitstatus_to_exitcode gives it: negative, killed by that signal


Request = Fork | Go | Installed  # what gbbot sends
Reply = Ready | Forked | Refused | Exited  # what the server sends
Message = Request | Reply
TYPES: dict[str, type[Any]] = {cls.type: cls for cls in (Fork, Go, Installed, Ready, Forked, Refused, Exited)}


def encode(message: Message) -> bytes:
    """One line of JSON: the message's fields and its type."""
    return (json.dumps({"type": message.type, **dataclasses.asdict(message)}) + "\n").encode()


def decode(line: bytes | str) -> Message:
    """The message on `line`, checked field by field; ProtocolError when it is not one."""
    if len(line) > MAX_LINE_BYTES:
        raise ProtocolError(f"a line of {len(line)} bytes")
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise ProtocolError(f"not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("type") not in TYPES:
        raise ProtocolError(f"not a message: {str(data)[:200]}")
    cls = TYPES[data.pop("type")]
    return _record(cls, data, cls.type)


def _record(cls: type[Any], data: object, where: str) -> Any:
    if not isinstance(data, dict):
        raise ProtocolError(f"{where}: an object expected")
    hints = typing.get_type_hints(cls)
    fields = [f.name for f in dataclasses.fields(cls)]
    if set(data) != set(fields):
        raise ProtocolError(f"{where}: fields {sorted(data)}, expected {sorted(fields)}")
    return cls(**{name: _value(data[name], hints[name], f"{where}.{name}") for name in fields})


def _value(value: object, hint: Any, where: str) -> Any:
    """`value` as the type `hint` declares (lists become tuples), or ProtocolError."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        for option in args:
            try:
                return _value(value, option, where)
            except ProtocolError:
                continue
        raise ProtocolError(f"{where}: {value!r:.80} is not {hint}")
    if origin is tuple:
        if not isinstance(value, list):
            raise ProtocolError(f"{where}: a list expected")
        return tuple(_value(item, args[0], f"{where}[]") for item in value)
    if origin is dict:
        if not isinstance(value, dict):
            raise ProtocolError(f"{where}: an object expected")
        return {_value(k, args[0], where): _value(v, args[1], f"{where}.{k}") for k, v in value.items()}
    if dataclasses.is_dataclass(hint):
        return _record(typing.cast(type, hint), value, where)
    if hint is type(None) and value is None:
        return None
    if hint in (str, bool) and type(value) is hint:
        return value
    if hint is int and type(value) is int:  # not a bool
        return value
    raise ProtocolError(f"{where}: {value!r:.80} is not {getattr(hint, '__name__', hint)}")
