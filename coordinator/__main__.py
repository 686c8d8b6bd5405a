"""``python -m coordinator``: run the broker (the options of ``sharetxn broker``)."""

import sys

from coordinator.command import main

sys.exit(main())
