"""gbbot fast mode, loaded through PYTHONPATH into every Python process an entrypoint starts.

When `torch` is imported, `torch.compile` (and so `nn.Module.compile`, which calls it) is wrapped
to use a backend that captures the FX graph and generates no code. Dynamo's tracing — and so every
graph break — is unchanged; only Inductor's code generation, most of a CPU run's time, is skipped.
Standalone on purpose: it must not import gbbot, and it must cost nothing when torch is not used.
"""

import functools
import importlib.abc
import importlib.util
import os
import sys

_ACTIVE = os.environ.get("GBBOT_MODE") == "fast"


def _capture_backend(gm, example_inputs):
    return gm.forward


def _patch_compile(torch):
    original = torch.compile

    @functools.wraps(original)
    def compile(model=None, **kwargs):
        kwargs["backend"] = _capture_backend
        kwargs.pop("mode", None)  # Inductor-only settings
        kwargs.pop("options", None)
        return original(model, **kwargs)

    torch.compile = compile


def _patch_optimize(dynamo):
    optimize = dynamo.optimize

    @functools.wraps(optimize)
    def optimize_capture(*args, **kwargs):
        if args:
            args = (_capture_backend, *args[1:])
        else:
            kwargs["backend"] = _capture_backend
        return optimize(*args, **kwargs)

    dynamo.optimize = optimize_capture


# Patched when (and only if) the program imports them: importing torch._dynamo eagerly would add
# over a second to every process that imports torch without compiling anything.
_PATCHES = {"torch": _patch_compile, "torch._dynamo": _patch_optimize}


class _ImportHook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        patch = _PATCHES.pop(name, None)
        if patch is None:
            return None
        if not _PATCHES:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            patch(module)

        spec.loader.exec_module = exec_and_patch
        return spec


def _chain_next_sitecustomize():
    """Run the sitecustomize this one shadows (a distribution's or a virtualenv's)."""
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        if os.path.abspath(entry or ".") == here:
            continue
        candidate = os.path.join(entry or ".", "sitecustomize.py")
        if os.path.isfile(candidate):
            spec = importlib.util.spec_from_file_location("_gbbot_chained_sitecustomize", candidate)
            if spec and spec.loader:
                spec.loader.exec_module(importlib.util.module_from_spec(spec))
            return


if _ACTIVE:
    for _name in [n for n in _PATCHES if n in sys.modules]:
        _PATCHES.pop(_name)(sys.modules[_name])
    if _PATCHES:
        sys.meta_path.insert(0, _ImportHook())
# Loaded by the warm server's child under another name, after the real sitecustomize already ran.
if __name__ == "sitecustomize":
    _chain_next_sitecustomize()
