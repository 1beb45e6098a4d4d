"""The edges gbbot itself talks to: git, subprocesses, signals, the terminal."""
