"""One module per fix recipe, each with the graph break that recipe removes (tests/fix/test_fix_e2e.py)."""
