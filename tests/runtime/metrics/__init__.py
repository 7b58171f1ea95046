"""Tests of ``nvcre.runtime.metrics`` (this folder mirrors runtime/metrics/)."""
