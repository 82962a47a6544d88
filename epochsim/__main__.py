import sys

from epochsim.cli import main

sys.exit(main())
