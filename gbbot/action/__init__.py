"""`gbbot action`: the GitHub Actions entrypoint, adapters from workflow events to the library.
`inputs` and `workflow` read what the workflow and the runner hand a step, `event` parses the
payload into a typed event, `dispatch` sends each event to its handler with the settings resolved
once (`context`) — one module per event (`pull_request`, `workflow_run`, `schedule`,
`issue_comment`, `other`); no handler imports another. Handlers call the library (gbbot.api),
deliver fixes through gbbot.deliver and publish through gbbot.publish; `analysis`, `publishing`
and `outputs` are the steps they share."""
