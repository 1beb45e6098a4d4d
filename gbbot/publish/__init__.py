"""Publishing a report on GitHub: the client (`github`), one `Sink` per thing posted on a pull
request (the sticky comment, the check run, the review of verified fixes) run in order by
`Sinks` (`sink`, `pull_request`), the workflow-command fallback when the token may not write,
and the retries and size limits every call keeps to. Nothing here runs entrypoints."""
