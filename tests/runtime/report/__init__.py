"""Tests of ``nvcre.runtime.report`` (this folder mirrors runtime/report/)."""
