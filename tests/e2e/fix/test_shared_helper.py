"""A setting written into a helper that compiles and calls every model holds for all of them, also
for models none of whose breaks it was verified on (where the helper only compiles, the setting
goes around each model's own call instead: tests/e2e/fix/test_library_fixes.py). Two models with an
LSTM are compiled and called by one helper (app/build.py), each model in its own module: `listen` (a `Codec`) with torch's own backend, `train` (a `Tagger`) with a backend that, like some
accelerators' (and, with autograd on, torch 2.13's Inductor), compiles no recurrent module. The
`allow_rnn` fix is verified for `listen` and dropped for `train` (its faithful run fails); the
setting, written once before the helper's compile, would reach `train` all the same. So `gbbot fix`
runs every entrypoint that read a patched file, with every patch in place, once more before it
writes anything: here `--apply` writes nothing and says why."""

from __future__ import annotations

import textwrap

import pytest

from gbbot.checks.tree import CheckOptions, check
from gbbot.core.config import load_config
from gbbot.core.fixes import FixStatus
from gbbot.fix.pipeline import FixOptions, fix
from tests.conftest import git

FILES = {
    "app/__init__.py": "",
    "app/build.py": '''
        import torch


        def compiled_run(model, x, backend="inductor"):
            """Every model of the app is compiled and called here."""
            model.eval()
            with torch.no_grad():
                return torch.compile(model, backend=backend)(x)
        ''',
    "app/models.py": """
        import torch


        class Codec(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = torch.nn.LSTM(4, 4, batch_first=True)

            def forward(self, x):
                return self.lstm(x)[0] + x
        """,
    "app/tagging.py": """
        import torch


        class Tagger(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = torch.nn.LSTM(4, 4, batch_first=True)

            def forward(self, x):
                return torch.tanh(self.lstm(x)[0])


        def rnn_refused(gm, example_inputs):
            for node in gm.graph.nodes:
                if "lstm" in str(node.target).lower():
                    raise RuntimeError("this backend compiles no recurrent module")
            return gm.forward
        """,
    "app/listen.py": """
        import torch

        from app.build import compiled_run
        from app.models import Codec


        def run():
            torch.manual_seed(0)
            return compiled_run(Codec(), torch.linspace(-1, 1, 24).reshape(2, 3, 4))
        """,
    "app/train.py": """
        import torch

        from app.build import compiled_run
        from app.tagging import Tagger, rnn_refused


        def run():
            torch.manual_seed(0)
            return compiled_run(Tagger(), torch.linspace(-1, 1, 24).reshape(2, 3, 4), backend=rnn_refused)
        """,
    "app/plain.py": """
        import torch

        from app.build import compiled_run


        def run():
            return compiled_run(torch.nn.Linear(4, 4), torch.ones(2, 4))
        """,
    ".gbbot.yml": """
        version: 1
        mode: fast
        entrypoints:
          - {name: listen, call: 'app.listen:run', timeout: 120}
          - {name: train, call: 'app.train:run', timeout: 120}
          - {name: plain, call: 'app.plain:run', timeout: 120}
        """,
}


@pytest.fixture(scope="module", params=["cli", "action"])
def fixed(request, tmp_path_factory):
    """`gbbot fix --apply` as the CLI runs it (its own baseline run of every entrypoint), and as
    the action does, handed the diff's report (entrypoints run when a trial needs them)."""
    repo = tmp_path_factory.mktemp("shared-helper") / "repo"
    for path, text in FILES.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(textwrap.dedent(text).lstrip("\n"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "app")
    config = load_config(repo / ".gbbot.yml")
    report = check(repo, config, CheckOptions(jobs=2)) if request.param == "action" else None
    said: list[str] = []
    return repo, fix(repo, config, FixOptions(apply=True, jobs=2, progress=said.append), report), said


def test_the_setting_verified_for_one_model_is_not_written_where_it_breaks_the_other(fixed):
    repo, run, said = fixed
    by_entrypoint = {r.entrypoints[0]: r for r in run.results}
    assert by_entrypoint["listen"].status is FixStatus.VERIFIED, by_entrypoint["listen"].reason
    assert by_entrypoint["listen"].variant == "allow_rnn"
    assert by_entrypoint["train"].status is FixStatus.DROPPED
    assert "with allow_rnn on, the compiler the code names fails" in by_entrypoint["train"].reason
    assert run.written == ()
    assert "allow_rnn" not in (repo / "app/build.py").read_text()
    (note,) = [n for n in run.notes if n.startswith("entrypoints that no patch was verified on")]
    assert "train ended failed" in note and "this backend compiles no recurrent module" in note, note
    assert note.endswith("; nothing written")
    # `plain` has no break: no trial runs it, yet it reads the helper, so it runs with the patch
    assert any(m.startswith("running plain, train, which read a patched file") for m in said), said
