import sys

from e2e.suite import main

sys.exit(main(sys.argv[1:]))
