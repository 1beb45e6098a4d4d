"""What this interpreter's installation held before any code of the repository ran: the names of
its top-level modules and packages (the standard library's, site-packages', PYTHONPATH's), read once, the first
time gbbot is about to run that code (a `setup:` step or an entrypoint). The warm server learns to
preload only modules among them: one that a setup step or an entrypoint wrote into site-packages
is never imported into the process every later child is forked from."""

from __future__ import annotations

import os
import pkgutil
import site
import sys
import threading

_LOCK = threading.Lock()
_NAMES: dict[tuple[str, ...], frozenset[str]] = {}  # the places read → the names found there


def _places() -> tuple[str, ...]:
    """Where installed modules come from: the installation's directories on sys.path, and
    PYTHONPATH's (what the entrypoints and the warm server will search before the checkout)."""
    places = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix, *site.getsitepackages()}
    roots = tuple(os.path.join(os.path.abspath(p), "") for p in places if p)
    inside = [p for p in sys.path if p and os.path.join(os.path.abspath(p), "").startswith(roots)]
    given = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return tuple(dict.fromkeys([*given, *inside]))


def remember() -> None:
    """Read the top-level names in these places now, unless they were read before (the first read
    wins: later, code of the repository may have written there)."""
    places = _places()
    with _LOCK:
        if places not in _NAMES:
            found = {module.name for module in pkgutil.iter_modules(list(places))}
            _NAMES[places] = frozenset(found | set(sys.builtin_module_names))


def before_any_code() -> frozenset[str] | None:
    """The names `remember` read in these places, or None when it never read them (gbbot used as
    a library)."""
    with _LOCK:
        return _NAMES.get(_places())
