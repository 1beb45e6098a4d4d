"""The warm server as gbbot starts it, minus torch: `python THIS SERVER_FILE FD [--learn | MODULE…]`
loads warm_server.py by path and runs its `main` with nothing required and no warm-up compile, so
the fast tier (where torch cannot start) drives the real server loop over its real socket.
Standalone: run by path, like the server itself."""

import importlib.util
import sys

server_file = sys.argv.pop(1)
spec = importlib.util.spec_from_file_location("warm_server", server_file)
assert spec is not None and spec.loader is not None
server = importlib.util.module_from_spec(spec)
spec.loader.exec_module(server)
raise SystemExit(server.main(sys.argv[1:], required=(), warm=lambda: None))
