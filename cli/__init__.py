"""The ``nvcrectl`` command line (also installed as ``kubectl-nvcre``)."""
