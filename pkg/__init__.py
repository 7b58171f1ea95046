"""The nvcre package root: holds the version; the work lives in nvcre.compiler, nvcre.runtime and nvcre.cli."""

__version__ = "0.1.0"
