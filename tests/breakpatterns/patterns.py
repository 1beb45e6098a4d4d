"""One function per graph-break pattern, each compiled on its own (tests/e2e/test_patterns.py).

The function names are what the tests look up; the comment on each line says what Dynamo reports
for it in torch 2.13.
"""

import copy
import logging
import warnings

import numpy as np
import torch

import fakelib

log = logging.getLogger("patterns")


def print_call(x):
    x = x + 1
    print("step")  # GB0059
    return x * 2


def logger_info(x):
    x = x + 1
    log.info("step")  # GB0291
    return x * 2


def warnings_warn(x):
    x = x + 1
    warnings.warn("careful")  # GB0007
    return x * 2


def item_call(x):
    n = x.sum().item()  # GB0124
    return x * n


def tolist_float(x):
    values = x.tolist()  # GB0109
    return x * len(values)


def data_dependent_if(x):
    if x.sum() > 0:  # GB0170
        return x * 2
    return x - 1


def nonzero_call(x):
    idx = torch.nonzero(x)  # GB0036
    return idx.sum() + x.sum()


def numpy_on_tensor(x):
    a = np.asarray(x.int())  # GB0033
    return x + int(a.sum())


def deepcopy_tensor(x):
    y = copy.deepcopy(x)  # GB4198
    return y + 1


def explicit_graph_break(x):
    x = x + 1
    torch._dynamo.graph_break()  # GB0025
    return x * 2


def break_in_loop(x):
    for _ in range(3):
        x = x + 1
        torch._dynamo.graph_break()  # GB0025 + GB7000: the frame falls back to eager
    print("after the loop")  # never seen until the loop break is fixed
    return x


def third_party_break(x):
    return fakelib.scale(x)  # the break happens inside fakelib (origin third_party)


def no_break(x):
    return torch.relu(x) * 2 + id(x) * 0


PATTERNS = [
    print_call,
    logger_info,
    warnings_warn,
    item_call,
    tolist_float,
    data_dependent_if,
    nonzero_call,
    numpy_on_tensor,
    deepcopy_tensor,
    explicit_graph_break,
    break_in_loop,
    third_party_break,
    no_break,
]


def main() -> None:
    for fn in PATTERNS:
        torch.compile(fn)(torch.ones(4))


if __name__ == "__main__":
    main()
