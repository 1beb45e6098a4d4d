"""Renderers: pure functions from a Report to text."""
