from batchtui.cli import main

raise SystemExit(main())
