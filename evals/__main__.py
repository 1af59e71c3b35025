import sys

from evals.cli import main

sys.exit(main())
