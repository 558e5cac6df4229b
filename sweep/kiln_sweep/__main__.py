import sys

from kiln_sweep.cli import main

sys.exit(main())
