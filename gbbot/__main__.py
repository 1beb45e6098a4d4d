from gbbot.main import main

raise SystemExit(main())
