"""Publishing a report on GitHub: the client (`client`), what is posted on a pull request (the
sticky comment, the check run, the review of verified fixes) in that order by `sink.publish`, the
workflow-command fallback when the token may not write, and the retries and size limits every
call keeps to. Nothing here runs entrypoints."""
