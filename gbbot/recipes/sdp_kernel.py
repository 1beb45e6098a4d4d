"""`with torch.backends.cuda.sdp_kernel(...)` — deprecated, and Dynamo cannot enter it (GB0142,
"Unsupported context manager") — becomes its drop-in replacement `torch.nn.attention.sdpa_kernel`,
which Dynamo traces. Chosen by the statement's shape, whatever break id the line reports.
"""

from __future__ import annotations

import libcst as cst

from gbbot.recipes.base import Edit, Recipe

SDP_KERNEL = "torch.backends.cuda.sdp_kernel"
# sdp_kernel's parameters in order, each enabling one backend (all default True), and the order in
# which torch's own sdp_kernel lists the backends it hands to sdpa_kernel.
PARAMETERS = ("enable_flash", "enable_math", "enable_mem_efficient", "enable_cudnn")
BACKENDS = (
    ("enable_flash", "FLASH_ATTENTION"),
    ("enable_mem_efficient", "EFFICIENT_ATTENTION"),
    ("enable_math", "MATH"),
    ("enable_cudnn", "CUDNN_ATTENTION"),
)
LITERALS = {"True": True, "False": False}


def enabled(call: cst.Call) -> dict[str, bool] | None:
    """Each parameter's value when every argument is a literal True/False; else None."""
    values = dict.fromkeys(PARAMETERS, True)
    for position, arg in enumerate(call.args):
        if arg.star or not isinstance(arg.value, cst.Name) or arg.value.value not in LITERALS:
            return None
        name = arg.keyword.value if arg.keyword else (PARAMETERS[position] if position < len(PARAMETERS) else None)
        if name not in values:
            return None
        values[name] = LITERALS[arg.value.value]
    return values


class SdpKernelReplace(Recipe):
    id = "sdp_kernel"
    variant = "sdpa_kernel"
    title = "replace the deprecated `sdp_kernel` with `torch.nn.attention.sdpa_kernel`"
    description = (
        "`torch.backends.cuda.sdp_kernel(enable_flash=…, enable_math=…, enable_mem_efficient=…)` is "
        "deprecated and Dynamo cannot trace into it. It is a thin wrapper: it calls "
        "`torch.nn.attention.sdpa_kernel` with the list of the enabled backends, so the patch writes "
        "that call with the same list. Same backends, same behaviour, and Dynamo traces the `with`."
    )

    def visit_WithItem(self, node: cst.WithItem) -> None:
        call = node.item
        if not isinstance(call, cst.Call) or not self.on_site(call) or not self.is_name(call.func, SDP_KERNEL):
            return
        values = enabled(call)
        if values is None:
            return
        backends = [
            cst.Element(self.torch_expr(f"nn.attention.SDPBackend.{backend}"))
            for parameter, backend in BACKENDS
            if values[parameter]
        ]
        # the call keeps its layout: a comment after `(` and the last argument's trailing comma stay
        last_comma = call.args[-1].comma if call.args else cst.MaybeSentinel.DEFAULT
        argument = cst.Arg(cst.List(backends), comma=last_comma)
        replacement = call.with_changes(func=self.torch_expr("nn.attention.sdpa_kernel"), args=[argument])
        # `from torch.backends.cuda import sdp_kernel` goes when this was its only use
        self.edits.append(Edit(call, replacement, ("torch",), released=self.from_import_of(call.func)))
