"""Broken configs: each gets one exact message naming the file and key, and exit code 2."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path

import pytest

from gbbot.core.config import Mode, load_config, parse_config
from gbbot.core.errors import ConfigError
from gbbot.main import main

GOOD = """\
version: 1
entrypoints:
  - name: train-step
    run: python train.py --steps 2
    timeout: 600
    env: {SEED: 0, FLAG: true}
  - name: forward
    call: mypkg.bench:forward_once
mode: faithful
fail_on: any
ignore:
  - {gb_id: GB0059, path: "scripts/**"}
"""


def test_good_config_becomes_typed_values():
    config = parse_config(GOOD, "cfg.yml")
    train, forward = config.entrypoints
    assert (train.name, train.run, train.timeout, train.env) == (
        "train-step",
        "python train.py --steps 2",
        600.0,
        (("SEED", "0"), ("FLAG", "true")),
    )
    assert (forward.call, forward.timeout, forward.kind) == ("mypkg.bench:forward_once", 900.0, "call")
    assert config.mode is Mode.FAITHFUL and config.fail_on == "any"
    assert config.ignore[0].gb_id == "GB0059" and config.ignore[0].path == "scripts/**"


MODEL = """\
version: 1
entrypoints:
  - name: gpt
    model: mypkg.model:GPT
    args: [{vocab: 100}]
    kwargs: {depth: 2}
    method: generate
    compile: {fullgraph: false, dynamic: null, mode: reduce-overhead}
    inputs: [{tensor: [2, 8], dtype: long, high: 100}]
    input_kwargs: {steps: 3}
    train: true
"""


def test_a_model_entrypoint_becomes_typed_values():
    (gpt,) = parse_config(MODEL, "cfg.yml").entrypoints
    assert (gpt.kind, gpt.model, gpt.method, gpt.train, gpt.returns_result) == (
        "model", "mypkg.model:GPT", "generate", True, True
    )  # fmt: skip
    assert gpt.args == ({"vocab": 100},) and gpt.kwargs == (("depth", 2),)
    assert gpt.compile == (("fullgraph", False), ("dynamic", None), ("mode", "reduce-overhead"))
    assert gpt.inputs == ({"tensor": [2, 8], "dtype": "long", "high": 100},) and gpt.input_kwargs == (("steps", 3),)


def test_a_model_entrypoint_defaults_to_forward_in_eval_mode():
    (net,) = parse_config("version: 1\nentrypoints: [{name: n, model: 'm:Net'}]\n").entrypoints
    assert (net.method, net.train, net.compile, net.inputs) == ("forward", False, (), ())


def test_defaults():
    config = parse_config("version: 1\nentrypoints: [{name: a, run: 'true'}]\n")
    assert config.mode is Mode.FAST and config.fail_on == "new" and config.ignore == ()
    assert config.autofix is False and config.audit.open_fix_pr is False


def test_open_fix_pr_is_an_audit_switch():
    text = "version: 1\nentrypoints: [{name: a, run: 'true'}]\naudit: {open_fix_pr: true}\n"
    assert parse_config(text).audit.open_fix_pr is True


def test_autofix_is_a_top_level_switch():
    assert parse_config("version: 1\nentrypoints: [{name: a, run: 'true'}]\nautofix: true\n").autofix is True


def test_digest_changes_with_content():
    a = parse_config("version: 1\nentrypoints: [{name: a, run: 'true'}]\n")
    b = parse_config("version: 1\nentrypoints: [{name: a, run: 'false'}]\n")
    assert a.digest != b.digest and len(a.digest) == 16


# One row per line, as the messages read: a table, not code to wrap.
# fmt: off
BROKEN = [
    ("", "cfg.yml: the file is empty; it needs `version: 1` and `entrypoints:`"),
    ("version: 1\nentrypoints: [\n", "cfg.yml: line 3, column 1: invalid YAML: expected the node content, but found '<stream end>'"),
    ("- just\n- a list\n", "cfg.yml: (top level): expected a mapping, got ['just', 'a list']"),
    ("entrypoints: [{name: a, run: x}]\n", "cfg.yml: version: required key is missing"),
    ("version: 2\nentrypoints: [{name: a, run: x}]\n", "cfg.yml: version: expected 1 (the only config version), got 2"),
    ("version: 1\n", "cfg.yml: entrypoints: required key is missing"),
    ("version: 1\nentrypoints: []\n", "cfg.yml: entrypoints: expected a non-empty list of entrypoints, got []"),
    ("version: 1\nentrypoints: {name: a}\n", "cfg.yml: entrypoints: expected a non-empty list of entrypoints, got {'name': 'a'}"),
    ("version: 1\nentrypoint: [{name: a, run: x}]\n", "cfg.yml: entrypoint: unknown key; did you mean 'entrypoints'?"),
    ("version: 1\nentrypoints: [{name: a, run: x, tiemout: 5}]\n", "cfg.yml: entrypoints[0].tiemout: unknown key; did you mean 'timeout'?"),
    ("version: 1\nentrypoints: [{name: a, run: x, timeout: soon}]\n", "cfg.yml: entrypoints[0].timeout: expected a positive number of seconds, got 'soon'"),
    ("version: 1\nentrypoints: [{name: a, run: x, timeout: -1}]\n", "cfg.yml: entrypoints[0].timeout: expected a positive number of seconds, got -1"),
    ("version: 1\nentrypoints: [{run: x}]\n", "cfg.yml: entrypoints[0].name: required key is missing"),
    ("version: 1\nentrypoints: [{name: 'a b', run: x}]\n", "cfg.yml: entrypoints[0].name: expected a name of letters, digits, '_', '.' or '-', got 'a b'"),
    ("version: 1\nentrypoints: [{name: a, run: x}, {name: a, run: y}]\n", "cfg.yml: entrypoints[1].name: duplicate entrypoint name 'a'"),
    ("version: 1\nentrypoints: [{name: a}]\n", "cfg.yml: entrypoints[0]: needs exactly one of 'run' (a command), 'call' (module:function), 'pytest' (tests to run) or 'model' (module:Class, an nn.Module to build and compile)"),
    ("version: 1\nentrypoints: [{name: a, run: x, call: 'm:f'}]\n", "cfg.yml: entrypoints[0]: needs exactly one of 'run' (a command), 'call' (module:function), 'pytest' (tests to run) or 'model' (module:Class, an nn.Module to build and compile)"),
    ("version: 1\nentrypoints: [{name: a, call: 'mypkg.bench'}]\n", "cfg.yml: entrypoints[0].call: expected 'module:function', e.g. mypkg.bench:forward_once, got 'mypkg.bench'"),
    ("version: 1\nentrypoints: [{name: a, model: 'm:M', call: 'm:f'}]\n", "cfg.yml: entrypoints[0]: needs exactly one of 'run' (a command), 'call' (module:function), 'pytest' (tests to run) or 'model' (module:Class, an nn.Module to build and compile)"),
    ("version: 1\nentrypoints: [{name: a, model: 'mypkg.GPT'}]\n", "cfg.yml: entrypoints[0].model: expected 'module:Class', e.g. mypkg.model:GPT, got 'mypkg.GPT'"),
    ("version: 1\nentrypoints: [{name: a, call: 'm:f', inputs: [1]}]\n", "cfg.yml: entrypoints[0].inputs: is for 'model' entrypoints only"),
    ("version: 1\nentrypoints: [{name: a, call: 'm:f', verify_output: true}]\n", "cfg.yml: entrypoints[0].verify_output: is for 'run' entrypoints only"),
    ("version: 1\nentrypoints: [{name: a, pytest: t.py, verify_output: true}]\n", "cfg.yml: entrypoints[0].verify_output: is for 'run' entrypoints only"),
    ("version: 1\nentrypoints: [{name: a, run: x, args: [1]}]\n", "cfg.yml: entrypoints[0].args: arguments are for 'call' and 'model' entrypoints only"),
    ("version: 1\nentrypoints: [{name: a, model: 'm:M', method: 'gen erate'}]\n", "cfg.yml: entrypoints[0].method: expected a method name, e.g. forward or generate, got 'gen erate'"),
    ("version: 1\nentrypoints: [{name: a, model: 'm:M', compile: {fulgraph: true}}]\n", "cfg.yml: entrypoints[0].compile.fulgraph: unknown torch.compile option; known: fullgraph, dynamic, mode, backend, dynamo"),
    ("version: 1\nentrypoints: [{name: a, model: 'm:M', compile: {dynamo: {capture_scalars: true}}}]\n", "cfg.yml: entrypoints[0].compile.dynamo.capture_scalars: unknown Dynamo setting; known: capture_scalar_outputs, capture_dynamic_output_shape_ops, allow_rnn, nested_graph_breaks, ignore_logging_functions"),
    ("version: 1\nentrypoints: [{name: a, model: 'm:M', compile: {dynamo: {ignore_logging_functions: warning_once}}}]\n", "cfg.yml: entrypoints[0].compile.dynamo.ignore_logging_functions: expected a list of logging.Logger method names, e.g. [warning_once], got 'warning_once'"),
    ("version: 1\nentrypoints: [{name: a, model: 'm:M', compile: {dynamic: maybe}}]\n", "cfg.yml: entrypoints[0].compile.dynamic: expected true, false or null, got 'maybe'"),
    ("version: 1\nentrypoints: [{name: a, model: 'm:M', inputs: [{tensor: [2], dtyp: long}]}]\n", "cfg.yml: entrypoints[0].inputs[0].dtyp: unknown key of a tensor spec; did you mean 'dtype'?"),
    ("version: 1\nentrypoints: [{name: a, run: 5}]\n", "cfg.yml: entrypoints[0].run: expected a non-empty string, got 5"),
    ("version: 1\nentrypoints: [{name: a, run: x, env: [A]}]\n", "cfg.yml: entrypoints[0].env: expected a mapping of NAME: value, got ['A']"),
    ("version: 1\nentrypoints: [{name: a, run: x, env: {A: {b: 1}}}]\n", "cfg.yml: entrypoints[0].env.A: expected a string or number, got {'b': 1}"),
    ("version: 1\nentrypoints: [{name: a, run: x}]\nmode: quick\n", "cfg.yml: mode: expected one of fast, faithful, got 'quick'"),
    ("version: 1\nentrypoints: [{name: a, run: x}]\nfail_on: always\n", "cfg.yml: fail_on: expected one of new, any, none, got 'always'"),
    ("version: 1\nentrypoints: [{name: a, run: x}]\nignore: GB0059\n", "cfg.yml: ignore: expected a list of rules like {gb_id: GB0059, path: 'scripts/**'}, got 'GB0059'"),
    ("version: 1\nentrypoints: [{name: a, run: x}]\nignore: [{}]\n", "cfg.yml: ignore[0]: an empty rule would ignore everything; use one of gb_id, gb_type, path, fingerprint, entrypoint"),
    ("version: 1\nentrypoints: [{name: a, run: x}]\nignore: [{gbid: GB0059}]\n", "cfg.yml: ignore[0].gbid: unknown key; did you mean 'gb_id'?"),
    ("version: 1\nentrypoints: [{name: a, run: x}]\nrunner: {backend: container}\n", "cfg.yml: runner.image: the container backend needs an image"),
    ("version: 1\nentrypoints: [{name: a, run: x}]\nautofix: 'yes'\n", "cfg.yml: autofix: expected true or false, got 'yes'"),
    ("version: 1\nentrypoints: [{name: a, run: x}]\nauto_fix: true\n", "cfg.yml: auto_fix: unknown key; did you mean 'autofix'?"),
    ("version: 1\nentrypoints: [{name: a, run: x}]\naudit: {open_fix_pr: 1}\n", "cfg.yml: audit.open_fix_pr: expected true or false, got 1"),
]
# fmt: on


@pytest.mark.parametrize(("text", "message"), BROKEN, ids=[m.split(": ", 1)[1][:40] for _, m in BROKEN])
def test_broken_config_message(text, message):
    with pytest.raises(ConfigError) as info:
        parse_config(text, "cfg.yml")
    assert str(info.value) == message


@pytest.mark.parametrize(("text", "message"), BROKEN[:6] + BROKEN[9:12], ids=str)
def test_broken_config_exits_2_with_the_message(tmp_path, capsys, text, message):
    path = tmp_path / "cfg.yml"
    path.write_text(text)
    assert main(["check", "--config", str(path), "--root", str(tmp_path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "gbbot: error: " + message.replace("cfg.yml", str(path))


def test_missing_config_file(tmp_path, capsys):
    assert main(["check", "--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path}/.gbbot.yml: no such file" in err and "--config PATH" in err


def test_unknown_entrypoint_selected(tmp_path, capsys):
    (tmp_path / ".gbbot.yml").write_text(
        textwrap.dedent("""\
        version: 1
        entrypoints: [{name: a, run: 'true'}]
    """)
    )
    assert main(["check", "--root", str(tmp_path), "-e", "b"]) == 2
    assert "unknown entrypoint 'b' (the config has: a)" in capsys.readouterr().err


# --- hostile YAML: a config comes from the repository under test, a pull request's on a PR ---------

LAUGHS = "".join(
    f"  {name}: &{name} [{','.join([f'*{prev}'] * 9 if prev else ['lol'] * 9)}]\n"
    for prev, name in zip([None, *"abcdefgh"], "abcdefghi", strict=True)
)
BILLION_LAUGHS = "version: 1\nentrypoints:\n" + LAUGHS  # 9**9 "lol"s once expanded, in under 400 bytes
ONE = "version: 1\nentrypoints: [{name: a, run: x, %s}]\n"
MANY_ALIASES = (
    "version: 1\nx: &x a\nentrypoints: [{name: a, run: x, env: {" + ", ".join(f"V{i}: *x" for i in range(101)) + "}}]\n"
)

# fmt: off
HOSTILE = [
    (BILLION_LAUGHS, "cfg.yml: refused: YAML anchors and aliases make more than 10000 values once aliases expand (a config needs far fewer)"),
    ("version: 1\nentrypoints: &e [*e]\n", "cfg.yml: line 2, column 14: nested more than 20 levels deep"),  # a list that holds itself
    (MANY_ALIASES, "cfg.yml: refused: YAML anchors and aliases make more than 100 aliases (a config needs far fewer)"),
    ("version: 1\nentrypoints:\n  - name: a\n    run: x\n    timeout: 5\n    timeout: 600\n", "cfg.yml: duplicate key 'timeout' on lines 5 and 6"),
    ("version: 1\nentrypoints: [{name: a, run: x}]\nversion: 1\n", "cfg.yml: duplicate key 'version' on lines 1 and 3"),
    (ONE % "timeout: .nan", "cfg.yml: entrypoints[0].timeout: expected a finite positive number of at most 1000000, got nan"),
    (ONE % "timeout: .inf", "cfg.yml: entrypoints[0].timeout: expected a finite positive number of at most 1000000, got inf"),
    (ONE % "timeout: -.inf", "cfg.yml: entrypoints[0].timeout: expected a positive number of seconds, got -inf"),
    (ONE % "timeout: 1.0e+400", "cfg.yml: entrypoints[0].timeout: expected a finite positive number of at most 1000000, got inf"),
    (ONE % f"timeout: {'9' * 25}", f"cfg.yml: entrypoints[0].timeout: expected a finite positive number of at most 1000000, got {'9' * 25}"),
    (ONE % f"timeout: {'9' * 300}", "cfg.yml: line 2, column 42: an integer of 300 digits (at most 30)"),
    (ONE % f"timeout: {'9' * 5000}", "cfg.yml: line 2, column 42: an integer of 5000 digits (at most 30)"),
    ("version: 1\nentrypoints: [{name: a, run: x}]\nrunner: {backend: local, cpus: .nan}\n", "cfg.yml: runner.cpus: expected a finite positive number of at most 1000000, got nan"),
    ("version: 1\nentrypoints: [{name: a, run: x}]\nrunner: {backend: local, cpus: 0}\n", "cfg.yml: runner.cpus: expected a positive number of CPUs, got 0"),
    ("version: 1\nentrypoints: [{name: a, model: m:M, inputs: [{tensor: [2], fill: .nan}]}]\n", "cfg.yml: entrypoints[0].inputs[0].fill: expected a finite number or boolean, without low/high, got nan"),
    (f"version: 1\nentrypoints: [{{name: a, run: x}}]\nmode: {'f' * 100_000}\n", f"cfg.yml: mode: expected one of fast, faithful, got '{'f' * 37}...{'f' * 38}'"),
    (f"version: 1\nentrypoints: [{{name: a, run: x}}]\nignore: [{'[' * 15}{']' * 15}]\n", "cfg.yml: ignore[0]: expected a mapping, got [[[...]]]"),
    (f"version: 1\nentrypoints: [{{name: a, run: x}}]\nignore: {'[' * 50}{']' * 50}\n", "cfg.yml: line 3, column 29: nested more than 20 levels deep"),
    (f"version: 1\nentrypoints: [{{name: a, run: x}}]\nignore: {'[' * 5000}{']' * 5000}\n", "cfg.yml: refused: YAML nested more than 20 levels deep"),
]
# fmt: on


@pytest.mark.parametrize(("text", "message"), HOSTILE, ids=[m.split(": ", 1)[1][:40] for _, m in HOSTILE])
def test_hostile_yaml_is_a_config_error_with_a_bounded_message(tmp_path, capsys, text, message):
    path = tmp_path / "cfg.yml"
    path.write_text(text)
    assert main(["check", "--config", str(path), "--root", str(tmp_path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "gbbot: error: " + message.replace("cfg.yml", str(path))
    assert len(err) < 300 + len(str(path))  # whatever the file holds, the message stays one short line


def test_billion_laughs_is_refused_before_anything_expands(tmp_path, capsys):
    """The old loader built the 9**9-item value (2.4 GB) to quote it in an error; the check of the
    composed graph refuses it with the file's own size of memory."""
    path = tmp_path / ".gbbot.yml"
    path.write_text(BILLION_LAUGHS)
    assert len(BILLION_LAUGHS.encode()) < 400
    tracemalloc.start()
    try:
        code = main(["check", "--root", str(tmp_path), "--quiet"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert code == 2
    assert f"{path}: refused: YAML anchors and aliases make more than 10000 values" in capsys.readouterr().err
    assert peak < 20 * 2**20, f"{peak / 2**20:.0f} MiB traced while refusing a {len(BILLION_LAUGHS)}-byte file"


def test_a_few_anchors_and_merge_keys_still_load():
    config = parse_config(
        textwrap.dedent("""\
        version: 1
        entrypoints:
          - &first {name: a, run: python train.py, timeout: 60, env: &env {SEED: "0"}}
          - {<<: *first, name: b, timeout: 120}
          - {name: c, call: "m:f", env: *env}
    """)
    )
    a, b, c = config.entrypoints
    assert (a.timeout, b.timeout, b.run, c.env) == (60.0, 120.0, "python train.py", (("SEED", "0"),))


def test_the_examples_in_docs_configuration_parse():
    from pathlib import Path

    text = (Path(__file__).parents[3] / "docs/configuration.md").read_text()
    blocks = [b.split("```", 1)[0] for b in text.split("```yaml\n")[1:]]
    full, calls, models = blocks[0], blocks[1], blocks[2]
    assert {e.kind for e in parse_config(full).entrypoints} == {"run", "call", "pytest", "model"}
    _, diffusion = parse_config("version: 1\nentrypoints:\n" + calls).entrypoints
    assert dict(diffusion.kwargs)["model"] == {"call": "mypkg.unet:Unet", "args": [32]}
    vit, gpt = parse_config("version: 1\nentrypoints:\n" + models).entrypoints
    assert (vit.model, gpt.method, gpt.train, dict(gpt.compile)) == (
        "vit_pytorch.vit:ViT", "generate", True, {"fullgraph": False, "dynamic": False}
    )  # fmt: skip


# --- a config that is not a regular file in the repository ------------------------------------


def _check(repo: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gbbot", "check", "--no-warm"], cwd=repo, capture_output=True, text=True, timeout=60
    )


def _link_chain_to_dev_zero(repo: Path) -> None:
    (repo / "sub").mkdir()
    os.symlink("/dev/zero", repo / "sub" / "zero")
    os.symlink("sub/zero", repo / ".gbbot.yml")  # one link deeper than the obvious one


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda repo: os.symlink("/dev/zero", repo / ".gbbot.yml"), "outside the repository"),
        (_link_chain_to_dev_zero, "outside the repository"),
        (lambda repo: os.mkfifo(repo / ".gbbot.yml"), "not a regular file"),
        (lambda repo: (repo / ".gbbot.yml").write_text("version: 1\n#" + "x" * (2 << 20) + "\n"), "larger than"),
        (lambda repo: (repo / ".gbbot.yml").mkdir(), "not a regular file"),
    ],
    ids=["link-to-dev-zero", "link-chain-to-dev-zero", "fifo", "two-megabytes", "directory"],
)
def test_a_config_that_is_not_a_regular_file_in_the_repository_is_exit_2_naming_it(tmp_path, make, said):
    repo = tmp_path / "repo"
    repo.mkdir()
    make(repo)
    done = _check(repo)
    assert done.returncode == 2, done.stderr[-2000:]
    assert ".gbbot.yml" in done.stderr and said in done.stderr


def test_a_link_to_a_config_inside_the_repository_is_read(tmp_path):
    repo = tmp_path / "repo"
    (repo / "configs").mkdir(parents=True)
    (repo / "configs" / "gbbot.yml").write_text("version: 1\nentrypoints:\n  - {name: a, run: 'true'}\n")
    os.symlink("configs/gbbot.yml", repo / ".gbbot.yml")
    assert load_config(repo / ".gbbot.yml", inside=repo).entrypoints[0].name == "a"


def test_every_problem_of_a_config_is_reported_at_once():
    text = (
        "version: 1\nmdoe: fast\nfail_on: sometimes\n"
        "entrypoints:\n"
        "  - {name: a, run: python a.py, timeout: -1}\n"
        "  - {name: b}\n"
        "  - {name: c, call: 'm:f', modle: x}\n"
    )
    with pytest.raises(ConfigError) as info:
        parse_config(text, "cfg.yml")
    assert str(info.value).splitlines() == [
        "5 problems in cfg.yml:",
        "  mdoe: unknown key; did you mean 'mode'?",
        "  fail_on: expected one of new, any, none, got 'sometimes'",
        "  entrypoints[0].timeout: expected a positive number of seconds, got -1",
        "  entrypoints[1]: needs exactly one of 'run' (a command), 'call' (module:function), 'pytest' (tests to run) "
        "or 'model' (module:Class, an nn.Module to build and compile)",
        "  entrypoints[2].modle: unknown key; did you mean 'model'?",
    ]
