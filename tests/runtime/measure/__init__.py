"""Tests of ``nvcre.runtime.measure`` (this folder mirrors runtime/measure/)."""
