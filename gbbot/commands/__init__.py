"""One module per CLI command: `add_arguments(parser)` and `run(args) -> exit code`. A command
parses its arguments, calls the library (gbbot.api), prints what it got and maps it to an exit
code; the work itself belongs in the library."""
