"""The pure middle: records → classified breaks and recompilations → a report, two reports → a
diff, shard reports → one, and whether a base run can be skipped."""
