import sys

from xcbench.cli import main

sys.exit(main())
