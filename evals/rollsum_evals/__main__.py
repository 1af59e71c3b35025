import sys

from rollsum_evals.cli import main

sys.exit(main())
