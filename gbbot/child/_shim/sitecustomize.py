"""gbbot fast mode, loaded through PYTHONPATH into every Python process an entrypoint starts.

When `torch` is imported, `torch.compile` (and so `nn.Module.compile`, which calls it) is wrapped
to use a backend that captures the FX graph and generates no code. Dynamo's tracing — and so every
graph break — is unchanged; only Inductor's code generation, most of a CPU run's time, is skipped.
Standalone on purpose: it must not import gbbot, and it must cost nothing when torch is not used.

It also counts, cheaply, what the run did with what Dynamo made: how many times each captured
graph ran (by the compile that made it) and how many times each compiled callable was called, and
writes that beside the trace at exit (RUNS_PREFIX + pid + ".json" in TORCH_TRACE's directory).
GBBOT_COUNT=0 in an entrypoint's `env:` turns the counting off (bench/bench_cost.py measures what
it costs that way).
"""

import atexit
import functools
import importlib.abc
import importlib.util
import json
import os
import sys

_ACTIVE = os.environ.get("GBBOT_MODE") == "fast"
_COUNTING = os.environ.get("GBBOT_COUNT") != "0"
RUNS_PREFIX = "gbbot-runs-"
OP_KINDS = ("call_function", "call_method", "call_module")
_GRAPHS = []  # one record per captured graph, in capture order
_CALLS = {}  # (file, first line, name) of the compiled code -> its record


def _compile_id():
    try:
        from torch._guards import CompileContext

        found = CompileContext.current_compile_id()
    except Exception:
        return None
    return None if found is None else str(found)


def _capture_backend(gm, example_inputs):
    forward = gm.forward
    if not _COUNTING:
        return forward
    nodes = list(gm.graph.nodes)
    graph = {"compile_id": _compile_id(), "ops": sum(n.op in OP_KINDS for n in nodes), "nodes": len(nodes), "runs": 0}
    _GRAPHS.append(graph)

    def run(*args):
        graph["runs"] += 1
        return forward(*args)

    return run


def _code_of(torch, model):
    """The code a compiled callable starts in: a module's forward (also for `nn.Module.compile`,
    which compiles the module's `_call_impl`), else the function's own."""
    owner = getattr(model, "__self__", None)
    if isinstance(owner, torch.nn.Module) and getattr(model, "__name__", "") == "_call_impl":
        model = owner
    if isinstance(model, torch.nn.Module):
        model = type(model).forward
    code = getattr(getattr(model, "__func__", model), "__code__", None)
    return None if code is None else (code.co_filename, code.co_firstlineno, code.co_name)


def _counter(torch, model):
    """A function that counts one call of `model`'s compiled form: outside a compile only, so
    that an outer torch.compile tracing through it sees no side effect."""
    key = _code_of(torch, model)
    if key is None:
        return None
    record = _CALLS.setdefault(key, {"file": key[0], "line": key[1], "name": key[2], "calls": 0})
    compiling = torch.compiler.is_compiling

    def count(*_args):
        if not compiling():
            record["calls"] += 1

    return count


def _counted(torch, model, compiled):
    count = _counter(torch, model)
    if count is None:
        return compiled
    if isinstance(compiled, torch.nn.Module):
        compiled.register_forward_pre_hook(lambda module, args: count())
        return compiled

    @functools.wraps(compiled)
    def call(*args, **kwargs):
        count()
        return compiled(*args, **kwargs)

    return call


def _trace_log():
    """The file this process's structured trace went to (its name), or None."""
    internal = sys.modules.get("torch._logging._internal")
    stream = getattr(getattr(internal, "LOG_TRACE_HANDLER", None), "stream", None)
    try:
        return os.path.basename(os.readlink(f"/proc/self/fd/{stream.fileno()}"))
    except (AttributeError, OSError, ValueError):
        return None


def _write_runs():
    directory = os.environ.get("TORCH_TRACE")
    if not directory or not (_GRAPHS or _CALLS):
        return
    record = {"trace_log": _trace_log(), "graphs": _GRAPHS, "calls": list(_CALLS.values())}
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, f"{RUNS_PREFIX}{os.getpid()}.json"), "w", encoding="utf-8") as handle:
        json.dump(record, handle)


def _patch_compile(torch):
    original = torch.compile

    @functools.wraps(original)
    def compile(model=None, **kwargs):
        kwargs["backend"] = _capture_backend
        kwargs.pop("mode", None)  # Inductor-only settings
        kwargs.pop("options", None)
        if model is None:  # @torch.compile(...) with arguments: the decorator comes back
            return lambda fn: compile(fn, **kwargs)
        compiled = original(model, **kwargs)
        return _counted(torch, model, compiled) if _COUNTING else compiled

    torch.compile = compile
    atexit.register(_write_runs)


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
