"""Reading what torch writes: the structured trace or TORCH_LOGS text → records, the wording of
each torch release, the graph-break registry, and which test wrote which records."""
