"""`python -m benchmarks NAME`: the same as `crag-bench NAME`."""

import sys

from .cli import main

sys.exit(main())
