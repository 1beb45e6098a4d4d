"""The nightly audit of the default branch: one compact record per run kept on a data branch of
the repository itself (`history`), and one tracking issue that shows the records over time
(`issue` renders it, `tracking` keeps it on GitHub). `record` turns a report into a record and
reads records back as untrusted data."""
