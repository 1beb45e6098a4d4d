"""`gbbot init`: find where a repository compiles (`discover`) and write a starter config from it
(`template`)."""
