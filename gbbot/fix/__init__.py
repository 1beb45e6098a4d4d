"""Verified fixes for graph breaks: recipes (LibCST codemods that only record edits), one engine
that applies them, verification by re-running the entrypoints in a scratch copy, scaffolds for
third-party code and advice in words for breaks with no mechanical fix.

Data flow: report breaks → `plan` (candidates, scaffolds, advice) → `verify` (re-run) →
`FixResult`s → report JSON (`Report.extra["fixes"]`), markdown lines, review suggestions.
"""
