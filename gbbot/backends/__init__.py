"""Running entrypoints: the only code that starts user code. `contract` says what a run is (the
request, the environment an entrypoint gets, how its end reads, running many at a time); each
backend module (`local`, `container`) runs one request its own way and imports only the contract;
`choose` picks the backend a config asks for and is the only module that knows them all. Importing
this package imports no backend (and so not the Docker SDK)."""
