"""`gbbot action`: the GitHub Actions entrypoint (inputs, event, runner files, publishing flow)."""
