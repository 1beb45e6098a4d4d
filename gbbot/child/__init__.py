"""Code that runs inside an entrypoint's own process: the `call:` launcher, the pytest plugin and
the fast-mode shim. Nothing here may assume gbbot's process."""
