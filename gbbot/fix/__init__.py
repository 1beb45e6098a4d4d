"""Verified fixes for graph breaks: everything `gbbot fix` does between a report's breaks and the
fix results, and how those results are shown. It holds the planning (`plan`: which break gets a
candidate patch from gbbot/recipes/, a scaffold for third-party code, advice in words, or
nothing), verification by re-running entrypoints in a scratch copy (`verify` judges, `trials` runs
and owns what the runs taught, `batch` packs candidates into runs) in rounds that fix what earlier
fixes revealed (`rounds`), the repository edge (`workspace`, `apply`), the composed command
(`pipeline`), and the terminal text (`present`). The result records are values in
gbbot/core/fixes.py, so that what reads them (render, publish, deliver) never imports this package.
Nothing here publishes to GitHub; publishing reads the results.

Data flow: report breaks → `plan` (candidates, scaffolds, advice) → `batch`/`trials` (verify) →
`FixResult`s → the report's `fixes` (its JSON's `extra.fixes`), shown by gbbot/render/fixes.py
and suggested by gbbot/publish/review.py → `apply` (write the verified patches, on request).
"""
