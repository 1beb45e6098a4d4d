"""Verified fixes for graph breaks: everything `gbbot fix` does between a report's breaks and the
fix results, and how those results are shown. It holds the planning (`plan`: which break gets a
candidate patch, a scaffold for third-party code, advice in words, or nothing), the one engine
that applies recipes to source text (`engine`, `patch`), verification by re-running entrypoints in
a scratch copy (`verify`, `rerun`, `batch`)
in rounds that fix what earlier fixes revealed (`rounds`), the repository edge (`workspace`, `apply`), the
composed command (`pipeline`), and the terminal text (`present`). The subpackage `recipes/` holds
only the recipes: LibCST visitors that record edits for one kind of break (never transform),
each with its own before/after examples. The result records are values in gbbot/core/fixes.py, so
that what reads them (render, publish, deliver) never imports this package. Nothing here
publishes to GitHub; publishing reads the results.

Data flow: report breaks → `plan` (candidates, scaffolds, advice) → `batch`/`rerun` (verify) →
`FixResult`s → the report's `fixes` (its JSON's `extra.fixes`), shown by gbbot/render/fixes.py
and suggested by gbbot/publish/review.py → `apply` (write the verified patches, on request).
"""
