import sys

from swcuts.cli import main

sys.exit(main())
