from batchtui.start import main

raise SystemExit(main())
