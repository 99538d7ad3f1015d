"""``python -m ppdp.flows.cli``: the ``ppdp`` command."""

import sys

from ppdp.flows.cli.app import main

if __name__ == "__main__":
    main()
    sys.exit()
