"""``python -m chaos.cli``: the ``sharetxn`` command line."""

import sys

from chaos.cli.main import main

sys.exit(main())
