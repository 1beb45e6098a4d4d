import torch


def compiled(model: torch.nn.Module) -> torch.nn.Module:
    """Every model of the app is compiled here, one call away from where it is used."""
    model.eval()
    return torch.compile(model)
