from sublane_desktop.cli import main

raise SystemExit(main())
