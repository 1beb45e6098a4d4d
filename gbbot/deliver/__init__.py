"""Delivering verified fixes across a trust boundary, one way for every deliverer (the PR check's
autofix, `/gb-fix`'s push stage, the audit's fix PR): the PR's files read as data (`sources`), the
fixes re-derived from them with gbbot's own recipes (`rederive`, `expected`), which breaks a fix
on a PR's branch may be for (`scope`), the checks a patch must pass (`patchcheck`), the fix commit
and the loop guard (`commit`), and the push (`push`)."""
