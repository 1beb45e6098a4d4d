"""Values every stage shares: the records, errors, GitHub's limits, the counts, and the
contracts with users (the config, `call:` arguments)."""
