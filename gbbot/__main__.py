import sys

try:
    from gbbot.main import main
except KeyboardInterrupt:  # Ctrl-C while gbbot itself was still being imported
    sys.exit(130)

raise SystemExit(main())
