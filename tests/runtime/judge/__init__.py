"""Tests of ``nvcre.runtime.judge`` (this folder mirrors runtime/judge/)."""
