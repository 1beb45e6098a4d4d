"""Publishing to GitHub: sticky comment, check run, fallback annotations, retries, limits."""
