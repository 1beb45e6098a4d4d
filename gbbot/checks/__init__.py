"""Composed runs: one tree → a report (`tree`), head and merge-base → a diff (`head_and_base`),
and where the base's report comes from (`baseline`)."""
