"""A tiny model with the graph breaks people really write (see docs/development.md: "What a run finds")."""
