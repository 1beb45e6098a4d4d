"""A config schema declared as tables, one line per key, checked by one engine (as pre-commit's
`clientlib` with cfgv's `Map`). A check takes (file, key, value) and returns the value converted,
or raises ConfigError naming the file, the key and what was expected. A mapping lists the problems
of all its keys at once; a list stops at its first bad item, and so does a mapping with `first`."""

from __future__ import annotations

import difflib
import math
import re
import reprlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gbbot.core.errors import ConfigError, ConfigErrors

Check = Callable[[str, str, Any], Any]  # (file, key, value) -> converted value
Rule = Callable[[str, str, dict[str, Any]], None]  # (file, key, the checked keys): across keys

# A config value quoted in an error is cut to this: the value may be anything the file's author
# (or a pull request's) wrote, and the message goes to a terminal, a log and a PR comment.
SHOWN_CHARS = 80
_SHORT_REPR = reprlib.Repr()
_SHORT_REPR.maxlevel = 2
_SHORT_REPR.maxdict = _SHORT_REPR.maxlist = _SHORT_REPR.maxtuple = _SHORT_REPR.maxset = 4
_SHORT_REPR.maxstring = _SHORT_REPR.maxlong = SHOWN_CHARS  # maxlong cuts the digits of a long int


def show(value: Any) -> str:
    """A bounded rendering: reprlib elides inside strings, containers and long integers, so no
    step builds the repr of a huge value only to cut it."""
    if value is None:
        return "nothing (null)"
    text = _SHORT_REPR.repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def fail(path: str, key: str, expected: str, value: Any) -> ConfigError:
    return ConfigError(path, key, f"expected {expected}, got {show(value)}")


def each(
    path: str, checks: Iterable[tuple[Any, Check, str, Any]], errors: Iterable[ConfigError] = (), first: bool = False
) -> list:
    """(label, check, key, value) → (label, checked value); the problems (`errors` found before,
    then the checks') raised together, or only the first."""
    problems, done = list(errors), []
    for label, check, key, value in checks:
        if problems and first:
            break
        try:
            done.append((label, check(path, key, value)))
        except ConfigError as exc:
            problems.append(exc)
    if problems:
        if first:
            raise problems[0]
        raise ConfigErrors.of(problems)
    return done


@dataclass(frozen=True)
class Map:
    """A mapping of known keys: an unknown one gets a did-you-mean, a required one must be there,
    `rule` checks across keys and `into` makes the typed value of the checked ones."""

    keys: Mapping[str, Check]
    required: tuple[str, ...] = ()
    into: Callable[..., Any] = dict
    rule: Rule | None = None
    expected: str = "a mapping"
    unknown: str = "unknown key; {hint}"  # {hint}: a did-you-mean, or the known keys; {known}: those
    first: bool = False

    def __call__(self, path: str, key: str, value: Any) -> Any:
        if not isinstance(value, Mapping):
            raise fail(path, key or "(top level)", self.expected, value)
        prefix = f"{key}." if key else ""
        errors, meant = [], set()  # a misspelt required key is one problem, not two
        for name in (name for name in value if name not in self.keys):
            close = difflib.get_close_matches(str(name), list(self.keys), n=1)
            meant.update(close)
            known = ", ".join(self.keys)
            hint = f"did you mean {close[0]!r}?" if close else f"known keys: {known}"
            errors.append(ConfigError(path, f"{prefix}{name}", self.unknown.format(hint=hint, known=known)))
        missing = [name for name in self.required if name not in value and name not in meant]
        errors += [ConfigError(path, f"{prefix}{name}", "required key is missing") for name in missing]
        checks = ((name, self.keys[name], f"{prefix}{name}", item) for name, item in value.items() if name in self.keys)
        found = dict(each(path, checks, errors, self.first))
        if self.rule:
            self.rule(path, key, found)
        return self.into(**found)


@dataclass(frozen=True)
class Seq:
    """A list whose items all pass `item`."""

    item: Check
    expected: str
    non_empty: bool = False
    into: Callable[[Iterable], Any] = tuple
    first: bool = True

    def __call__(self, path: str, key: str, value: Any) -> Any:
        if not isinstance(value, list) or (self.non_empty and not value):
            raise fail(path, key, self.expected, value)
        checks = ((i, self.item, f"{key}[{i}]", item) for i, item in enumerate(value))
        return self.into(found for _, found in each(path, checks, first=self.first))


@dataclass(frozen=True)
class Pairs:
    """A mapping of names the user chooses (environment variables, keyword arguments) → (name, value) pairs."""

    name: Check
    value: Check
    expected: str
    into: Callable[[list], Any] = tuple

    def __call__(self, path: str, key: str, value: Any) -> Any:
        if not isinstance(value, Mapping):
            raise fail(path, key, self.expected, value)
        checks = ((name, self._pair, f"{key}.{name}", (name, item)) for name, item in value.items())
        return self.into(each(path, checks, first=True))

    def _pair(self, path: str, key: str, pair: tuple[Any, Any]) -> Any:
        self.name(path, key, pair[0])
        return self.value(path, key, pair[1])


def that(test: Callable[[Any], Any], expected: str) -> Check:
    """A value `test` accepts, as it is."""

    def check(path: str, key: str, value: Any) -> Any:
        if not test(value):
            raise fail(path, key, expected, value)
        return value

    return check


def integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def text(expected: str = "a non-empty string") -> Check:
    return that(lambda value: isinstance(value, str) and value.strip(), expected)


def choice(*options: str) -> Check:
    return that(lambda value: value in options, "one of " + ", ".join(options))


def matching(pattern: re.Pattern[str], expected: str) -> Check:
    return that(lambda value: isinstance(value, str) and pattern.fullmatch(value), expected)


def identifier(expected: str) -> Check:
    return that(lambda value: isinstance(value, str) and value.isidentifier(), expected)


def whole(low: int, high: int) -> Check:
    return that(lambda value: integer(value) and low <= value <= high, f"a whole number from {low} to {high}")


string = text()
boolean = that(lambda value: isinstance(value, bool), "true or false")
MAX_NUMBER = 1_000_000  # seconds (11 days) or CPUs: larger is a typo, and overflows timers


def finite(value: Any) -> bool:
    """A YAML number that is one: not a boolean, not .nan or .inf."""
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)


def positive(unit: str) -> Check:
    """A positive number of `unit` (seconds, CPUs), bounded."""

    def check(path: str, key: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise fail(path, key, f"a positive number of {unit}", value)
        # .nan compares false with everything and .inf passes `> 0`: both must be refused here
        if not finite(value) or value > MAX_NUMBER:
            raise fail(path, key, f"a finite positive number of at most {MAX_NUMBER}", value)
        return float(value)

    return check
