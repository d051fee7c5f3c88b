"""``python -m epm_lib.experiments``: runs :func:`epm_lib.experiments.cli.main`.

The functions and runs that the workers (loky, Dask) unpickle live in the importable modules of
``epm_lib.experiments``, never in this ``__main__``."""
import sys

from epm_lib.experiments.cli import main

if __name__ == "__main__":
    sys.exit(main())
