"""Renderers: pure functions from a Report to text — the terminal table (`terminal`), the markdown
report a PR comment shows (`markdown` and its Jinja template), SARIF (`sarif`), workflow-command
annotations (`annotations`) — over one flattened view of the breaks (`findings`), with every piece
of untrusted text escaped for where it goes (`escape`). Nothing here reads files, runs anything or
talks to GitHub: publishing decides where the text goes and fits it under GitHub's limits."""
