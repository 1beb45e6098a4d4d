"""What this interpreter's installation held before any code of the repository ran: the names of
its top-level modules and packages (the standard library's, site-packages'), read once, the first
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
_NAMES: list[frozenset[str]] = []


def _places() -> list[str]:
    places = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix, *site.getsitepackages()}
    roots = [os.path.join(os.path.abspath(p), "") for p in places if p]
    return [p for p in sys.path if p and os.path.join(os.path.abspath(p), "").startswith(tuple(roots))]


def remember() -> None:
    """Read the installation's top-level names now, unless they were read before (the first read
    wins: later, code of the repository may have written there)."""
    with _LOCK:
        if not _NAMES:
            found = {module.name for module in pkgutil.iter_modules(_places())}
            _NAMES.append(frozenset(found | set(sys.builtin_module_names)))


def before_any_code() -> frozenset[str] | None:
    """The names `remember` read, or None when it never ran (gbbot used as a library)."""
    with _LOCK:
        return _NAMES[0] if _NAMES else None
