import sys

from pygbn.cli import main

sys.exit(main())
