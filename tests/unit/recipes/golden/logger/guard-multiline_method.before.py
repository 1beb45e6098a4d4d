import logging

import torch

logger = logging.getLogger(__name__)


class Block(torch.nn.Module):
    def forward(self, x):
        if x.dim() == 2:
            logger.warning(
                "2-d input %s; expected %d dims",
                tuple(x.shape),
                3,
            )  # BREAK
        return x
