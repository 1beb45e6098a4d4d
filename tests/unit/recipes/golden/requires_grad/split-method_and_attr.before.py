import torch


class Trainer:
    @torch.compile(fullgraph=False)
    def step(self, x, w, /, *rest, scale=1.0, **options):
        """Forward and loss."""
        # gradients for w
        w.requires_grad = True  # BREAK
        return ((x * w).sum() * scale, rest, options)
