import logging

import torch

log = logging.getLogger(__name__)


def body(x):
    x = x.sin()
    print("body: sin done")
    log.info("body done")
    return x * 2


def run():
    torch.manual_seed(0)
    return torch.compile(body)(torch.randn(4))
