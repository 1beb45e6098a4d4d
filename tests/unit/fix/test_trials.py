"""Which patches need a faithful run before their fast-mode verdict holds: those that turn on a
setting that hands the compiler numbers and shapes read from tensors, in any of the forms gbbot
writes it."""

from gbbot.fix.patch import FilePatch
from gbbot.fix.trials import settings_turned_on

BEFORE = "import torch\n\n\ndef compiled(model):\n    return torch.compile(model)\n"


def _patch(after: str, before: str = BEFORE, path: str = "app/build.py") -> FilePatch:
    return FilePatch(path, before, after)


def test_a_wrapped_compile_a_statement_before_it_and_a_model_entrys_option_each_turn_a_setting_on():
    wrapped = BEFORE.replace(
        "return torch.compile(model)",
        "return torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(model))",
    )
    before_it = BEFORE.replace(
        "    return torch.compile(model)",
        "    torch._dynamo.config.capture_dynamic_output_shape_ops = True\n    return torch.compile(model)",
    )
    entry = "entrypoints:\n  - name: m\n    model: 'app:M'\n    compile: {dynamo: {capture_scalar_outputs: true}}\n"
    assert settings_turned_on([_patch(wrapped)]) == ("capture_scalar_outputs",)
    assert settings_turned_on([_patch(before_it)]) == ("capture_dynamic_output_shape_ops",)
    assert settings_turned_on([_patch(entry, "entrypoints: []\n", ".gbbot.yml")]) == ("capture_scalar_outputs",)


def test_a_setting_already_on_or_a_logger_setting_needs_no_faithful_run():
    on = BEFORE.replace("    return", "    torch._dynamo.config.capture_scalar_outputs = True\n    return")
    guarded = on.replace("return torch.compile(model)", "return torch.compile(model)  # the print is guarded")
    logger = BEFORE.replace(
        "    return", "    torch._dynamo.config.ignore_logging_functions |= {logging.Logger.warning}\n    return"
    )
    assert settings_turned_on([_patch(guarded, on)]) == ()
    assert settings_turned_on([_patch(logger)]) == ()
    turned_off = on.replace("= True", "= False")
    assert settings_turned_on([_patch(turned_off, on)]) == ()
