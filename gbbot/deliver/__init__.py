"""Delivering verified fixes: the pinned source read from git objects, fixes re-derived from it,
the checks a patch must pass, and the loop guard."""
