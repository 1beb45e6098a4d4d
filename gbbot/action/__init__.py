"""`gbbot action`: the GitHub Actions entrypoint. `inputs` and `runner` read what the workflow
and the runner hand a step, `event` parses the payload into a typed event, `context` holds what
every handler shares, and `dispatch` sends each event to its handler — one module per event
(`pull_request`, `workflow_run`, `other`). Handlers call the library (gbbot.api) and publish
through gbbot.publish; `analysis`, `publishing` and `outputs` are the steps they share."""
