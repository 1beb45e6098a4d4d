"""A tiny model with the graph breaks people really write (see README: "The example")."""
