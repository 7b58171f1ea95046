"""Tests of ``nvcre.runtime.endpoint`` (this folder mirrors runtime/endpoint/)."""
